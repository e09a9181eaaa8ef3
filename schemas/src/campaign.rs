//! The campaign document: one signed in-toto Statement that binds a campaign's plan to the
//! result of each of its cells, by digest.
//!
//! Where it sits: after every cell's result is verified (`runner campaign collect`), before
//! the site. The statement's subjects are the cells' result files; the predicate cites the
//! plan and the same results as in-toto materials (`uri` + `digest`), lays out the matrix
//! (axes, and each cell's index, id, axis labels and outcome), and is signed in a DSSE
//! envelope like a result. A reader who holds the result files checks each one against its
//! digest ([`check_materials`]); the numbers themselves are always recomputed from the
//! results, never stored here.

use crate::document::Subject;
use crate::dsse::{Envelope, EnvelopeView};
use crate::keys::TrustedKey;
use crate::{PAYLOAD_TYPE, STATEMENT_TYPE};
use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The campaign predicate's type (a result's is [`crate::PREDICATE_TYPE`]). `v0.2` added an
/// experiment's factors, design and each cell's levels and repetition.
pub const CAMPAIGN_PREDICATE_TYPE: &str = "https://provebench.dev/campaign/v0.2";

/// The campaign predicate types a reader accepts: the current one and those before it.
pub const CAMPAIGN_PREDICATE_TYPES: &[&str] = &[
    CAMPAIGN_PREDICATE_TYPE,
    "https://provebench.dev/campaign/v0.1",
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignStatement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// The cells' result files.
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Campaign,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    pub name: String,
    /// RFC 3339: when the results were collected.
    pub collected_at: String,
    /// provebench's name and version that collected them.
    pub tool: String,
    /// The plan's text, byte for byte (its digest is the first material).
    pub plan: String,
    /// Each axis the plan names, with its values' labels in the plan's order.
    pub axes: Vec<Axis>,
    /// An experiment's factors, each with its levels' labels in the plan's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub factors: Vec<Axis>,
    /// An experiment's design: how its treatments were chosen and ordered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<DesignEntry>,
    pub cells: Vec<CellEntry>,
    /// The plan, then every verified cell's result: what the campaign was made of.
    pub materials: Vec<Material>,
}

/// An experiment's design as it ran: every treatment `repetitions` times, each repetition in
/// the order `order` (`random`: shuffled from `seed`; `plan`: as the plan expands), the
/// treatments the full factorial or a listed set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DesignEntry {
    pub treatments: u32,
    pub full_factorial: bool,
    pub repetitions: u32,
    pub order: String,
    pub seed: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub name: String,
    pub values: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellEntry {
    pub index: u32,
    pub id: String,
    /// Axis name → the label of this cell's value.
    pub axes: BTreeMap<String, String>,
    /// An experiment's cell: factor name → the label of its level.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub factors: BTreeMap<String, String>,
    /// An experiment's cell: its repetition (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    pub outcome: Outcome,
    /// The result file, relative to the campaign document, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why the cell has no verified result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Signed by the campaign's key, every summary recomputed, the run complete.
    Verified,
    /// A result that is incomplete or does not verify, or a run that failed.
    Failed,
    /// No result.
    Missing,
}

/// An in-toto ResourceDescriptor: a file by name and sha256.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Material {
    pub uri: String,
    pub digest: BTreeMap<String, String>,
}

impl Material {
    pub fn sha256(uri: &str, sha256: &str) -> Material {
        Material {
            uri: uri.to_string(),
            digest: BTreeMap::from([("sha256".to_string(), sha256.to_string())]),
        }
    }
}

/// Wraps the campaign in a statement (subjects: the verified cells' results) and signs it.
pub fn envelope(campaign: Campaign, signer: Option<&SigningKey>) -> (CampaignStatement, Envelope) {
    let subject = campaign
        .materials
        .iter()
        .filter(|m| {
            campaign
                .cells
                .iter()
                .any(|c| c.result.as_deref() == Some(&m.uri))
        })
        .map(|m| Subject {
            name: m.uri.clone(),
            digest: m.digest.clone(),
        })
        .collect();
    let statement = CampaignStatement {
        statement_type: STATEMENT_TYPE.to_string(),
        subject,
        predicate_type: CAMPAIGN_PREDICATE_TYPE.to_string(),
        predicate: campaign,
    };
    let payload = serde_json::to_vec(&statement).expect("campaigns serialise");
    let keyid = signer.map(|k| crate::keys::keyid(&k.verifying_key()));
    let envelope = Envelope::new(PAYLOAD_TYPE, &payload, signer.zip(keyid.as_deref()));
    (statement, envelope)
}

/// A campaign document read back: its statement and who signed it.
#[derive(Clone, Debug)]
pub struct Checked {
    pub statement: CampaignStatement,
    /// The trusted key's name, when a trusted key signed it.
    pub signed_by: Option<String>,
    /// What is wrong with it; empty when nothing is.
    pub problems: Vec<String>,
}

/// Whether `bytes` look like a campaign document (so a reader can route them here).
pub fn is_campaign(bytes: &[u8]) -> bool {
    EnvelopeView::parse(bytes)
        .and_then(|e| e.decode())
        .ok()
        .and_then(|d| serde_json::from_slice::<serde_json::Value>(d.payload()).ok())
        .is_some_and(|v| {
            v["predicateType"]
                .as_str()
                .is_some_and(|t| CAMPAIGN_PREDICATE_TYPES.contains(&t))
        })
}

/// Parses a campaign envelope and checks its signature against `trusted` and its
/// statement's shape: every cell with a result has it as a subject and a material, the plan
/// is the first material with the plan text's digest.
pub fn check(bytes: &[u8], trusted: &[TrustedKey]) -> Result<Checked, String> {
    let envelope = EnvelopeView::parse(bytes).map_err(|e| e.to_string())?;
    let decoded = envelope.decode().map_err(|e| e.to_string())?;
    let signer = envelope.signed_by(&decoded, trusted);
    let statement: CampaignStatement = serde_json::from_slice(decoded.payload())
        .map_err(|e| format!("the payload is not a campaign statement: {e}"))?;
    let mut problems = Vec::new();
    if let Some(k) = signer {
        // A key trusted only for a window vouches only for campaigns collected inside it.
        match humantime::parse_rfc3339(&statement.predicate.collected_at) {
            Ok(at) => {
                if let Err(reason) = k.usable_at(at) {
                    problems.push(reason);
                }
            }
            Err(_) => problems.push("collected_at is not an RFC 3339 time".into()),
        }
    }
    if signer.is_none() {
        problems.push(if envelope.signatures.is_empty() {
            "unsigned".to_string()
        } else {
            "no signature verifies under a trusted key".to_string()
        });
    }
    if statement.statement_type != STATEMENT_TYPE {
        problems.push(format!("_type is {:?}", statement.statement_type));
    }
    if !CAMPAIGN_PREDICATE_TYPES.contains(&statement.predicate_type.as_str()) {
        problems.push(format!("predicateType is {:?}", statement.predicate_type));
    }
    let c = &statement.predicate;
    use sha2::Digest;
    let plan_digest = hex::encode(sha2::Sha256::digest(c.plan.as_bytes()));
    match c.materials.first() {
        Some(m) if m.digest.get("sha256") == Some(&plan_digest) => {}
        _ => problems.push("the first material is not the plan's digest".into()),
    }
    for cell in &c.cells {
        let Some(uri) = &cell.result else {
            if cell.outcome == Outcome::Verified {
                problems.push(format!("cell {} is verified but names no result", cell.id));
            }
            continue;
        };
        let material = c.materials.iter().find(|m| &m.uri == uri);
        let subject = statement.subject.iter().find(|s| &s.name == uri);
        match (material, subject) {
            (Some(m), Some(s)) if m.digest == s.digest => {}
            _ => problems.push(format!(
                "cell {}: its result {uri} is not both a subject and a material with one digest",
                cell.id
            )),
        }
    }
    Ok(Checked {
        signed_by: signer.map(|k| k.name.clone()),
        statement,
        problems,
    })
}

/// Checks each cell's result file against its digest: `read(uri)` gives the bytes, or None
/// when the file is not at hand. Returns one problem per file missing or changed.
pub fn check_materials(
    campaign: &Campaign,
    mut read: impl FnMut(&str) -> Option<Vec<u8>>,
) -> Vec<String> {
    use sha2::Digest;
    let mut problems = Vec::new();
    for m in campaign.materials.iter().skip(1) {
        match read(&m.uri) {
            None => problems.push(format!("{}: missing", m.uri)),
            Some(bytes) => {
                let digest = hex::encode(sha2::Sha256::digest(&bytes));
                if m.digest.get("sha256") != Some(&digest) {
                    problems.push(format!(
                        "{}: its sha256 is {digest}, not the campaign's",
                        m.uri
                    ));
                }
            }
        }
    }
    problems
}
