//! `--study FILE`: a study's settings in a TOML file, for `study`, `aggregator`, `keyholder`
//! and `node`. Every key is a long flag of the command (`protocol = "hessian"`, `lambda = 0.5`,
//! `standardize = true`, `party = ["a.csv", "b.csv"]`); the file's settings are placed before
//! the command line's, so a flag given on the command line overrides the file (list flags such
//! as `party` add to it).

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// Commands that take `--study FILE`.
const COMMANDS: [&str; 4] = ["study", "aggregator", "keyholder", "node"];

/// `args` with `--study FILE` replaced by the file's settings as flags.
pub fn expand(args: Vec<OsString>) -> Result<Vec<OsString>> {
    let Some(command) = args.iter().position(|a| COMMANDS.iter().any(|c| a == c)) else {
        return Ok(args);
    };
    let Some(at) = args.iter().position(|a| a == "--study") else {
        return Ok(args);
    };
    if at < command {
        return Ok(args);
    }
    let path = args
        .get(at + 1)
        .context("--study needs a file: --study FILE")?
        .clone();
    let flags = read(Path::new(&path))?;
    let mut out: Vec<OsString> = args[..=command].to_vec();
    out.extend(flags);
    out.extend(args[command + 1..at].iter().cloned());
    out.extend(args[at + 2..].iter().cloned());
    Ok(out)
}

/// The flags a study file stands for.
fn read(path: &Path) -> Result<Vec<OsString>> {
    let name = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e
            .span()
            .map(|span| {
                let before = &text[..span.start];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(":{line}:{column}")
            })
            .unwrap_or_default();
        anyhow::anyhow!("{name}{at}: {}", e.message())
    })?;
    let mut flags = Vec::new();
    for (key, value) in &table {
        let flag = format!("--{}", key.replace('_', "-"));
        let scalar = |v: &toml::Value| -> Result<String> {
            Ok(match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                other => bail!(
                    "{name}: {key} is a {}, expected a string or a number",
                    other.type_str()
                ),
            })
        };
        match value {
            toml::Value::Boolean(true) => flags.push(flag.into()),
            toml::Value::Boolean(false) => {}
            toml::Value::Array(items) => {
                for item in items {
                    flags.push(flag.clone().into());
                    flags.push(scalar(item)?.into());
                }
            }
            v => {
                flags.push(flag.into());
                flags.push(scalar(v)?.into());
            }
        }
    }
    Ok(flags)
}
