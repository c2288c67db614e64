//! `privlogit identity new --name hospital-a`: a party's key pair and self-signed certificate,
//! and the fingerprint to put in the study file.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use privlogit::protocols::transport::Identity;

use crate::Outcome;

/// Arguments of `privlogit identity`.
#[derive(Debug, Args)]
pub struct IdentityArgs {
    #[command(subcommand)]
    command: IdentityCommand,
}

#[derive(Debug, Subcommand)]
enum IdentityCommand {
    /// Write NAME.key (secret, mode 0600) and NAME.crt, and print the certificate's
    /// fingerprint for the study file.
    New {
        /// The party's name, as the study file will name it (letters, digits, '-', '_', '.').
        #[arg(long)]
        name: String,
        /// Directory to write the two files into.
        #[arg(long, value_name = "DIR", default_value = ".")]
        out: PathBuf,
    },
    /// Print the fingerprint of an existing certificate (PREFIX.crt and PREFIX.key).
    Show {
        /// The identity's path without extension, e.g. keys/hospital-a.
        #[arg(value_name = "PREFIX")]
        prefix: PathBuf,
    },
}

/// Runs `privlogit identity`.
pub fn run(args: IdentityArgs) -> Result<Outcome> {
    match args.command {
        IdentityCommand::New { name, out } => {
            if name.is_empty()
                || name.len() > 64
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                || name.starts_with('.')
            {
                bail!(
                    "--name {name:?}: use 1 to 64 letters, digits, '-', '_' or '.', not starting with '.'"
                );
            }
            let identity = Identity::generate(&name)?;
            let (crt, key) = identity.save(&out.join(&name))?;
            eprintln!(
                "wrote {} (keep it secret) and {}",
                key.display(),
                crt.display()
            );
            println!("{}", identity.fingerprint());
        }
        IdentityCommand::Show { prefix } => {
            let identity = Identity::load(&prefix)
                .with_context(|| format!("cannot load the identity {}", prefix.display()))?;
            println!("{}", identity.fingerprint());
        }
    }
    Ok(Outcome::Success)
}
