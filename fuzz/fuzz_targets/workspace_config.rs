//! The operator's workspace configuration file.
#![no_main]
use agent_task::workflow::service::facade::WorkspaceConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = WorkspaceConfig::parse(data) {
        for p in &c.agent_task_profiles {
            assert!(c.profile(&p.repository_id, &p.profile_id).is_ok());
        }
    }
});
