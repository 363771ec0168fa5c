//! What a server says of itself in `INFO server`, read the same way for
//! Redis, Valkey and Redict. Valkey and Redict keep `redis_version` at a
//! compatibility constant (`7.2.4`) and give their own version in
//! `valkey_version` / `redict_version`; the mode is `redis_mode`,
//! `server_mode` (Valkey) or `redict_mode` (Redict).

/// The value of `name:value` in INFO text.
pub fn info_field<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

/// The server's name: `server_name` (Valkey), `redict` where
/// `redict_version` is given, else `redis`.
pub fn name(text: &str) -> &str {
    match info_field(text, "server_name") {
        Some(n) if !n.is_empty() => n,
        _ if info_field(text, "redict_version").is_some() => "redict",
        _ => "redis",
    }
}

/// The server's own version: `<name>_version` (`valkey_version:9.1.2`),
/// else `redis_version`.
pub fn version(text: &str) -> Option<&str> {
    info_field(text, &format!("{}_version", name(text))).or_else(|| info_field(text, "redis_version"))
}

/// `standalone`, `cluster` or `sentinel`, from whichever mode field the
/// server writes, or `cluster` from `cluster_enabled:1` (`INFO cluster`).
pub fn mode(text: &str) -> Option<&str> {
    ["redis_mode", "server_mode", "valkey_mode", "redict_mode"]
        .iter()
        .find_map(|f| info_field(text, f))
        .or_else(|| (info_field(text, "cluster_enabled") == Some("1")).then_some("cluster"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_in_its_own_words() {
        let redis = "# Server\r\nredis_version:8.0.2\r\nredis_mode:standalone\r\n";
        assert_eq!((name(redis), version(redis), mode(redis)), ("redis", Some("8.0.2"), Some("standalone")));
        let valkey = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\nserver_mode:cluster\r\n";
        assert_eq!((name(valkey), version(valkey), mode(valkey)), ("valkey", Some("9.1.2"), Some("cluster")));
        let redict = "# Server\r\nredis_version:7.2.4\r\nredict_version:7.3.6\r\nredict_mode:cluster\r\n";
        assert_eq!((name(redict), version(redict), mode(redict)), ("redict", Some("7.3.6"), Some("cluster")));
        let cluster_section = "# Cluster\r\ncluster_enabled:1\r\n";
        assert_eq!(mode(cluster_section), Some("cluster"));
        assert_eq!(mode("cluster_enabled:0\r\n"), None);
    }
}
