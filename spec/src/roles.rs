//! Prefill and decode roles of a deployment that serves them apart (vLLM's and SGLang's
//! disaggregated prefill, llm-d, Dynamo): which GPUs prefill and which decode
//! (`--prefill-gpus`, `--decode-gpus`), and where each side's servers publish their metrics
//! (`--prefill-metrics-url`, `--decode-metrics-url`). The requests still go to the one
//! endpoint the deployment serves (its router or proxy, `--target`); the roles say how to
//! divide what it did (`schemas::roles`).

use anyhow::{bail, Context, Result};
use schemas::document::telemetry::ServingRole;

/// One declared role.
#[derive(Clone, Debug, PartialEq)]
pub struct Role {
    pub role: ServingRole,
    /// NVML indices of its GPUs.
    pub gpus: Vec<u32>,
    /// The host named before the indices (`HOST:0,1`), when the GPUs are not this host's.
    pub host: Option<String>,
    /// Its servers' metrics pages.
    pub metrics_urls: Vec<String>,
}

/// Reads a role's GPUs: `0,1,4-7` (NVML indices on this host), or `HOST:0-3` for GPUs on
/// another host. Indices are distinct; at least one.
pub fn parse_gpus(text: &str, flag: &str) -> Result<(Option<String>, Vec<u32>)> {
    let (host, list) = match text.rsplit_once(':') {
        Some((host, list)) if !host.trim().is_empty() => (Some(host.trim().to_string()), list),
        Some((_, _)) => bail!("{flag} {text:?}: a host before ':' must be named"),
        None => (None, text),
    };
    let mut gpus: Vec<u32> = vec![];
    for part in list.split(',').map(str::trim) {
        let index = |s: &str| -> Result<u32> {
            s.trim().parse::<u32>().with_context(|| {
                format!("{flag} {text:?}: {s:?} is not a GPU index (a list like 0,1 or 0-3)")
            })
        };
        let range = match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (index(a)?, index(b)?);
                if b < a {
                    bail!("{flag} {text:?}: the range {part:?} runs backwards");
                }
                a..=b
            }
            None => {
                let i = index(part)?;
                i..=i
            }
        };
        for i in range {
            if gpus.contains(&i) {
                bail!("{flag} {text:?} names GPU {i} twice");
            }
            gpus.push(i);
        }
    }
    if gpus.len() > 4096 {
        bail!("{flag} {text:?}: more than 4096 GPUs");
    }
    Ok((host, gpus))
}

/// The roles a spec declares, prefill first; empty when it declares none. A metrics page
/// without GPUs, or one role's GPU also the other's on the same host, is refused.
pub fn declared(
    prefill_gpus: Option<&str>,
    decode_gpus: Option<&str>,
    prefill_metrics: &[String],
    decode_metrics: &[String],
) -> Result<Vec<Role>> {
    let mut roles: Vec<Role> = vec![];
    for (role, gpus, metrics, gpu_flag, metrics_flag) in [
        (
            ServingRole::Prefill,
            prefill_gpus,
            prefill_metrics,
            "--prefill-gpus",
            "--prefill-metrics-url",
        ),
        (
            ServingRole::Decode,
            decode_gpus,
            decode_metrics,
            "--decode-gpus",
            "--decode-metrics-url",
        ),
    ] {
        let Some(text) = gpus else {
            if !metrics.is_empty() {
                bail!("{metrics_flag} needs {gpu_flag}: the role's GPUs divide its throughput");
            }
            continue;
        };
        let (host, gpus) = parse_gpus(text, gpu_flag)?;
        for url in metrics {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                bail!("{metrics_flag} {url:?}: a metrics page is an http:// or https:// URL");
            }
        }
        roles.push(Role {
            role,
            gpus,
            host,
            metrics_urls: metrics.to_vec(),
        });
    }
    if let [p, d] = roles.as_slice() {
        if p.host == d.host {
            if let Some(g) = p.gpus.iter().find(|g| d.gpus.contains(g)) {
                bail!("GPU {g} is in both --prefill-gpus and --decode-gpus: a GPU serves one role");
            }
        }
    }
    Ok(roles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_are_indices_ranges_or_another_hosts() {
        assert_eq!(parse_gpus("0,1", "f").unwrap(), (None, vec![0, 1]));
        assert_eq!(parse_gpus("4-7", "f").unwrap(), (None, vec![4, 5, 6, 7]));
        assert_eq!(
            parse_gpus("node-b:0-1,3", "f").unwrap(),
            (Some("node-b".into()), vec![0, 1, 3])
        );
        for bad in ["", "a", "1,1", "3-1", ":0", "0-2,2"] {
            assert!(parse_gpus(bad, "--prefill-gpus").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_role_needs_its_gpus_and_a_gpu_serves_one_role() {
        let urls = vec!["http://p:8100/metrics".to_string()];
        let roles = declared(Some("0"), Some("1,2"), &urls, &[]).unwrap();
        assert_eq!(roles.len(), 2);
        assert_eq!(roles[1].gpus, [1, 2]);
        let e = declared(None, Some("1"), &urls, &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("--prefill-metrics-url needs --prefill-gpus"),
            "{e}"
        );
        let e = declared(Some("0,1"), Some("1"), &[], &[]).unwrap_err();
        assert!(e.to_string().contains("GPU 1 is in both"), "{e}");
        assert!(declared(Some("a:0"), Some("b:0"), &[], &[]).is_ok());
        let e = declared(Some("0"), None, &["p:8100".into()], &[]).unwrap_err();
        assert!(e.to_string().contains("http://"), "{e}");
    }
}
