//! Pure classification of IP addresses that an outbound fetch must not reach
//! unless the operator opted in to private networks.
//!
//! The rule is an allow-list at the top level and a deny-list below it:
//!
//! - IPv4: every address is public except the special-purpose blocks listed in
//!   [`V4_BLOCKED`] (IANA IPv4 Special-Purpose Address Registry, plus all of
//!   224.0.0.0/3 for multicast, reserved and broadcast).
//! - IPv6: only global unicast `2000::/3` can be public. Everything outside
//!   it is refused, which covers `::`, `::1`, IPv4-mapped `::ffff:0:0/96`,
//!   IPv4-compatible `::/96`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`,
//!   discard-only `100::/64`, unique-local `fc00::/7`, link-local
//!   `fe80::/10`, site-local `fec0::/10` and multicast `ff00::/8`. Inside
//!   `2000::/3` the blocks in [`V6_BLOCKED`] are refused (IETF protocol
//!   assignments incl. Teredo and benchmarking, documentation, 6to4).
//!
//! Transition prefixes are refused whole, whatever IPv4 address they embed:
//! the embedded address cannot be trusted to be the one finally reached.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One refused IPv4 block: network, prefix length, name.
type V4Block = (Ipv4Addr, u8, &'static str);
/// One refused IPv6 block: network, prefix length, name.
type V6Block = (Ipv6Addr, u8, &'static str);

/// Refused IPv4 blocks.
pub const V4_BLOCKED: &[V4Block] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "this_network"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared_cgnat"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link_local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "ietf_protocol_assignments"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation"),
    (Ipv4Addr::new(192, 31, 196, 0), 24, "as112"),
    (Ipv4Addr::new(192, 52, 193, 0), 24, "amt"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4_relay_anycast"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private"),
    (
        Ipv4Addr::new(192, 175, 48, 0),
        24,
        "direct_delegation_as112",
    ),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved_or_broadcast"),
];

/// Refused IPv6 blocks inside global unicast `2000::/3`.
pub const V6_BLOCKED: &[V6Block] = &[
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "ietf_protocol_assignments",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "documentation",
    ),
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "6to4"),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "documentation",
    ),
];

/// Names for the refused space outside `2000::/3`, most specific first.
const V6_OUTSIDE_NAMES: &[V6Block] = &[
    (Ipv6Addr::UNSPECIFIED, 128, "unspecified"),
    (Ipv6Addr::LOCALHOST, 128, "loopback"),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0),
        96,
        "ipv4_mapped",
    ),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 96, "ipv4_compatible"),
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, "nat64"),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "nat64_local",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "discard_only",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique_local",
    ),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link_local"),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site_local"),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
];

fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    };
    (u32::from(ip) & mask) == (u32::from(net) & mask)
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    };
    (u128::from(ip) & mask) == (u128::from(net) & mask)
}

/// Why `ip` must not be reached without the private-network opt-in, or
/// `None` when it is a public address.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => V4_BLOCKED
            .iter()
            .find(|(net, len, _)| in_v4(v4, *net, *len))
            .map(|(_, _, name)| *name),
        IpAddr::V6(v6) => {
            if !in_v6(v6, Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3) {
                return Some(
                    V6_OUTSIDE_NAMES
                        .iter()
                        .find(|(net, len, _)| in_v6(v6, *net, *len))
                        .map(|(_, _, name)| *name)
                        .unwrap_or("reserved"),
                );
            }
            V6_BLOCKED
                .iter()
                .find(|(net, len, _)| in_v6(v6, *net, *len))
                .map(|(_, _, name)| *name)
        }
    }
}

/// True when the hostname is `localhost` or a `*.localhost` name (after
/// lowercasing and dropping one trailing dot); such names are refused
/// without resolving them.
pub fn is_localhost_name(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    let h = h.strip_suffix('.').unwrap_or(&h);
    h == "localhost" || h.ends_with(".localhost")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Option<&'static str> {
        blocked_reason(IpAddr::V4(s.parse().expect("v4 literal")))
    }
    fn v6(s: &str) -> Option<&'static str> {
        blocked_reason(IpAddr::V6(s.parse().expect("v6 literal")))
    }

    #[test]
    fn ipv4_every_block_edges() {
        // For every block: the first and last address are refused, and the
        // addresses just outside are classified by something else (or public).
        for (net, len, name) in V4_BLOCKED {
            let first = u32::from(*net);
            let last = first | (u32::MAX.checked_shr(u32::from(*len)).unwrap_or(0));
            assert_eq!(v4(&Ipv4Addr::from(first).to_string()), Some(*name));
            assert_eq!(v4(&Ipv4Addr::from(last).to_string()), Some(*name));
        }
    }

    #[test]
    fn ipv4_named_cases() {
        let cases: &[(&str, Option<&str>)] = &[
            ("0.0.0.0", Some("this_network")),
            ("0.255.255.255", Some("this_network")),
            ("1.0.0.0", None),
            ("9.255.255.255", None),
            ("10.0.0.1", Some("private")),
            ("11.0.0.0", None),
            ("100.63.255.255", None),
            ("100.64.0.0", Some("shared_cgnat")),
            ("100.127.255.255", Some("shared_cgnat")),
            ("100.128.0.0", None),
            ("126.255.255.255", None),
            ("127.0.0.1", Some("loopback")),
            ("127.255.255.254", Some("loopback")),
            ("128.0.0.0", None),
            ("169.253.255.255", None),
            ("169.254.169.254", Some("link_local")),
            ("169.255.0.0", None),
            ("172.15.255.255", None),
            ("172.16.0.0", Some("private")),
            ("172.31.255.255", Some("private")),
            ("172.32.0.0", None),
            ("192.0.0.8", Some("ietf_protocol_assignments")),
            ("192.0.1.0", None),
            ("192.0.2.55", Some("documentation")),
            ("192.0.3.0", None),
            ("192.88.99.1", Some("6to4_relay_anycast")),
            ("192.167.255.255", None),
            ("192.168.1.1", Some("private")),
            ("192.169.0.0", None),
            ("198.17.255.255", None),
            ("198.18.0.0", Some("benchmarking")),
            ("198.19.255.255", Some("benchmarking")),
            ("198.20.0.0", None),
            ("198.51.100.7", Some("documentation")),
            ("203.0.113.9", Some("documentation")),
            ("203.0.114.0", None),
            ("8.8.8.8", None),
            ("93.184.215.14", None),
            ("223.255.255.255", None),
            ("224.0.0.1", Some("multicast")),
            ("239.255.255.255", Some("multicast")),
            ("240.0.0.1", Some("reserved_or_broadcast")),
            ("255.255.255.255", Some("reserved_or_broadcast")),
        ];
        for (ip, want) in cases {
            assert_eq!(v4(ip), *want, "{ip}");
        }
    }

    #[test]
    fn ipv4_exhaustive_first_octets() {
        // Every /8: only the listed first octets are wholly refused.
        for a in 0u8..=255 {
            let got = v4(&format!("{a}.200.200.200"));
            let want = match a {
                0 => Some("this_network"),
                10 => Some("private"),
                127 => Some("loopback"),
                224..=239 => Some("multicast"),
                240..=255 => Some("reserved_or_broadcast"),
                _ => None,
            };
            assert_eq!(got, want, "{a}.200.200.200");
        }
    }

    #[test]
    fn ipv6_named_cases() {
        let cases: &[(&str, Option<&str>)] = &[
            ("::", Some("unspecified")),
            ("::1", Some("loopback")),
            ("::2", Some("ipv4_compatible")),
            ("::ffff:127.0.0.1", Some("ipv4_mapped")),
            ("::ffff:8.8.8.8", Some("ipv4_mapped")),
            ("::ffff:10.0.0.1", Some("ipv4_mapped")),
            ("::127.0.0.1", Some("ipv4_compatible")),
            ("::8.8.8.8", Some("ipv4_compatible")),
            ("64:ff9b::7f00:1", Some("nat64")),
            ("64:ff9b::808:808", Some("nat64")),
            ("64:ff9b:1::1", Some("nat64_local")),
            ("100::1", Some("discard_only")),
            ("fc00::1", Some("unique_local")),
            ("fdff:ffff::1", Some("unique_local")),
            ("fe80::1", Some("link_local")),
            ("febf::1", Some("link_local")),
            ("fec0::1", Some("site_local")),
            ("ff02::1", Some("multicast")),
            ("ff0e::1", Some("multicast")),
            ("1fff:ffff::1", Some("reserved")),
            ("4000::1", Some("reserved")),
            ("2001::1", Some("ietf_protocol_assignments")),
            (
                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
                Some("ietf_protocol_assignments"),
            ),
            ("2001:2::1", Some("ietf_protocol_assignments")),
            ("2001:1ff:ffff::1", Some("ietf_protocol_assignments")),
            ("2001:200::1", None),
            ("2001:db8::1", Some("documentation")),
            ("2001:db9::1", None),
            ("2002:7f00:1::1", Some("6to4")),
            ("2002:808:808::1", Some("6to4")),
            ("2003::1", None),
            ("3fff::1", Some("documentation")),
            ("3fff:fff::1", Some("documentation")),
            ("3fff:1000::1", None),
            ("2606:4700:4700::1111", None),
            ("2a00:1450:4001:81b::200e", None),
        ];
        for (ip, want) in cases {
            assert_eq!(v6(ip), *want, "{ip}");
        }
    }

    #[test]
    fn ipv6_exhaustive_first_hextet_top_bits() {
        // Sampling every value of the first 7 bits: only 001x (2000::/3) can
        // be public.
        for top in 0u16..128 {
            let first = top << 9 | 0x0100;
            let ip = Ipv6Addr::new(first, 0x1234, 0, 0, 0, 0, 0, 1);
            let public = blocked_reason(IpAddr::V6(ip)).is_none();
            let in_global = (0x2000..0x4000).contains(&first)
                && !(first == 0x2001 || first == 0x2002 || (0x3fff..0x4000).contains(&first));
            assert_eq!(public, in_global, "{ip}");
        }
    }

    #[test]
    fn localhost_names() {
        for h in [
            "localhost",
            "LOCALHOST",
            "localhost.",
            "a.localhost",
            "x.y.Localhost.",
        ] {
            assert!(is_localhost_name(h), "{h}");
        }
        for h in [
            "localhost.example",
            "notlocalhost",
            "example.com",
            "localhostx",
        ] {
            assert!(!is_localhost_name(h), "{h}");
        }
    }
}
