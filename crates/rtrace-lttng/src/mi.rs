//! The few facts we read from `lttng --mi xml` output. The MI schema is stable, and the
//! elements we need are flat, so plain text scanning is enough (no XML parser dependency).

/// The text of every `<tag>…</tag>` element in `xml`, in order (elements must not nest in
/// themselves, which holds for the leaf elements read here).
pub fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find(&close) else { break };
        out.push(&body[..end]);
        rest = &body[end + close.len()..];
    }
    out
}

/// Names of all recording sessions in `lttng --mi xml list`.
pub fn session_names(xml: &str) -> Vec<String> {
    elements(xml, "session")
        .into_iter()
        .filter_map(|s| elements(s, "name").first().map(|n| n.to_string()))
        .collect()
}

/// Sum of a numeric leaf element (e.g. `discarded_events`) over every channel in
/// `lttng --mi xml list SESSION`.
pub fn channel_sum(xml: &str, tag: &str) -> Result<u64, std::num::ParseIntError> {
    elements(xml, "channel")
        .into_iter()
        .flat_map(|c| elements(c, tag))
        .map(|v| v.trim().parse::<u64>())
        .sum()
}

/// [`channel_sum`] over the channels of one domain (`UST`, `KERNEL`) only.
pub fn domain_channel_sum(
    xml: &str,
    domain: &str,
    tag: &str,
) -> Result<u64, std::num::ParseIntError> {
    elements(xml, "domain")
        .into_iter()
        .filter(|d| elements(d, "type").first().map(|t| t.trim()) == Some(domain))
        .map(|d| channel_sum(d, tag))
        .sum()
}

/// The UST events an application offers, from `lttng --mi xml list -u`: `None` when the
/// process `pid` is not registered with the session daemon.
pub fn app_events(xml: &str, pid: u32) -> Option<Vec<String>> {
    let id = pid.to_string();
    elements(xml, "pid")
        .into_iter()
        .find(|p| elements(p, "id").first().map(|s| s.trim()) == Some(id.as_str()))
        .map(|p| {
            elements(p, "event")
                .into_iter()
                .filter_map(|e| elements(e, "name").first().map(|n| n.to_string()))
                .collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = r#"<?xml version="1.0" encoding="UTF-8"?><command><name>list</name><output><sessions><session><name>rtrace_1_0</name><path></path><enabled>false</enabled></session><session><name>other</name></session></sessions></output></command>"#;

    const SESSION: &str = r#"<command><name>list</name><output><sessions><session><name>rtrace_7_0</name><domains><domain><type>UST</type><channels><channel><name>rtrace</name><attributes><overwrite_mode>DISCARD</overwrite_mode></attributes><statistics><discarded_events>68763</discarded_events><lost_packets>0</lost_packets></statistics><events><event><name>rtrace:event</name></event></events></channel></channels></domain></domains></session></sessions></output></command>"#;

    const APPS: &str = r#"<command><output><domains><domain><type>UST</type><pids><pid><id>25389</id><name>/x/workload-lttng</name><events><event><name>rtrace:idle</name></event><event><name>rtrace:event</name></event></events></pid><pid><id>7</id><name>/bin/other</name><events/></pid></pids></domain></domains></output></command>"#;

    #[test]
    fn lists_session_names_not_command_names() {
        assert_eq!(session_names(LIST), ["rtrace_1_0", "other"]);
        assert!(session_names("<sessions/>").is_empty());
    }

    #[test]
    fn sums_channel_statistics() {
        assert_eq!(channel_sum(SESSION, "discarded_events").unwrap(), 68763);
        assert_eq!(channel_sum(SESSION, "lost_packets").unwrap(), 0);
        assert_eq!(channel_sum(LIST, "discarded_events").unwrap(), 0);
    }

    #[test]
    fn sums_one_domain_apart_from_the_other() {
        let kernel = r#"<domain><type>KERNEL</type><channels><channel><name>rtrace_kernel</name><statistics><discarded_events>12</discarded_events></statistics></channel></channels></domain>"#;
        let both = SESSION.replace("</domains>", &format!("{kernel}</domains>"));
        assert_eq!(channel_sum(&both, "discarded_events").unwrap(), 68775);
        assert_eq!(
            domain_channel_sum(&both, "UST", "discarded_events").unwrap(),
            68763
        );
        assert_eq!(
            domain_channel_sum(&both, "KERNEL", "discarded_events").unwrap(),
            12
        );
        assert_eq!(
            domain_channel_sum(SESSION, "KERNEL", "discarded_events").unwrap(),
            0
        );
    }

    #[test]
    fn finds_the_events_of_one_app() {
        let events = app_events(APPS, 25389).unwrap();
        assert_eq!(events, ["rtrace:idle", "rtrace:event"]);
        assert_eq!(app_events(APPS, 7).unwrap(), Vec::<String>::new());
        assert!(app_events(APPS, 2538).is_none());
    }
}
