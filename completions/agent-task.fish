complete --keep-order --exclusive --command agent-task --arguments "(AGENT_TASK_COMPLETE=fish agent-task -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
