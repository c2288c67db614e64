//! The flags of `fit`, `study`, `keyholder`, `aggregator` and `node`, made from the library's
//! settings ([`privlogit::settings::KEYS`]: names, help, defaults), and what the user gave on
//! the command line handed back as settings for the library to apply over the study file.

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches};
use privlogit::settings::{Kind, Reader, default_text, keys_of};

/// The settings a command line gave (in the order the registry lists them) and its study
/// files.
#[derive(Debug, Clone)]
pub struct Given {
    /// `(key, value)` for each value the user gave, a repeated flag once per value.
    pub settings: Vec<(String, toml::Value)>,
    /// `--study FILE`, repeatable for the servers (one study each).
    pub studies: Vec<PathBuf>,
}

/// The flags of `reader`, with `--study FILE` for the secure roles.
pub fn add(mut command: Command, reader: Reader) -> Command {
    if !matches!(reader, Reader::Fit | Reader::DpFit) {
        let servers = matches!(reader, Reader::KeyHolder | Reader::Aggregator);
        command = command.arg(
            Arg::new("study")
                .long("study")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .action(ArgAction::Append)
                .help(if servers {
                    "The study file: settings, and the parties with their certificates and \
                     addresses; repeat it to serve several studies in this process (each on its \
                     own thread and listener, its lines prefixed with [file stem])"
                } else {
                    "Settings and parties from a TOML study file whose keys are these flags' \
                     names (flags given here override it)"
                }),
        );
    }
    for key in keys_of(reader) {
        let mut arg = Arg::new(key.name)
            .long(key.name.replace('_', "-"))
            .help(crate::log::in_flags(key.help))
            .hide(key.hidden);
        arg = match key.kind {
            Kind::Switch => arg.action(ArgAction::SetTrue),
            kind => {
                let mut a = arg.value_name(key.value_name).action(if key.many {
                    ArgAction::Append
                } else {
                    ArgAction::Set
                });
                if key.many {
                    // A list of numbers is written `0.5,0.3,0.2`; other lists repeat the flag.
                    a = if kind == Kind::Number {
                        a.value_delimiter(',')
                    } else {
                        a.num_args(1..)
                    };
                }
                a = match kind {
                    Kind::Number => a
                        .allow_negative_numbers(true)
                        .value_parser(clap::value_parser!(f64)),
                    Kind::Count => a.value_parser(clap::value_parser!(u64)),
                    Kind::Choice(names) => a.value_parser(names.to_vec()),
                    _ => a,
                };
                match default_text(key) {
                    Some(d) => a.default_value(d),
                    None => a,
                }
            }
        };
        command = command.arg(arg);
    }
    command
}

/// What the user gave for `reader` (defaults left to the library).
pub fn given(matches: &ArgMatches, reader: Reader) -> Given {
    let mut settings = Vec::new();
    for key in keys_of(reader) {
        if matches.value_source(key.name) != Some(ValueSource::CommandLine) {
            continue;
        }
        let raw: Vec<String> = matches
            .get_raw(key.name)
            .map(|values| {
                values
                    .map(|v: &std::ffi::OsStr| v.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if key.kind == Kind::Switch {
            settings.push((key.name.to_string(), toml::Value::Boolean(true)));
            continue;
        }
        for v in raw {
            settings.push((key.name.to_string(), toml::Value::String(v)));
        }
    }
    // `fit` has no --study (asking clap for an argument it does not define panics in debug
    // builds).
    let studies = matches
        .try_get_many::<PathBuf>("study")
        .ok()
        .flatten()
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    Given { settings, studies }
}

macro_rules! reader_args {
    ($name:ident, $reader:expr) => {
        /// The settings flags of one command (see the module).
        #[derive(Debug, Clone)]
        pub struct $name(pub Given);

        impl FromArgMatches for $name {
            fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
                Ok(Self(given(matches, $reader)))
            }

            fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
                self.0 = given(matches, $reader);
                Ok(())
            }
        }

        impl clap::Args for $name {
            // A flag given twice keeps its last value (a script can append an override);
            // repeatable flags such as `--party` still collect every value.
            fn augment_args(command: Command) -> Command {
                add(command, $reader).args_override_self(true)
            }

            fn augment_args_for_update(command: Command) -> Command {
                add(command, $reader).args_override_self(true)
            }
        }
    };
}

reader_args!(FitArgs, Reader::Fit);
reader_args!(StudyArgs, Reader::Study);
reader_args!(KeyholderArgs, Reader::KeyHolder);
reader_args!(AggregatorArgs, Reader::Aggregator);
reader_args!(NodeArgs, Reader::Node);
reader_args!(DealerArgs, Reader::Dealer);
reader_args!(DpOptions, Reader::DpFit);

#[cfg(test)]
mod tests {
    use super::*;
    use privlogit::settings::Spec;

    /// The command line shows the library's defaults, and only the library's: every flag with
    /// a default shows the value `Spec::default()` holds (Python's keywords are checked
    /// against the same in python/tests/test_defaults.py), and every DP option its registry
    /// default.
    #[test]
    fn dp_option_defaults_are_the_registrys() {
        let command = add(Command::new("x"), Reader::DpFit);
        let mut shown_any = 0;
        for key in keys_of(Reader::DpFit) {
            let arg = command
                .get_arguments()
                .find(|a| a.get_id().as_str() == key.name)
                .expect("every DP option is a flag");
            let shown: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            match (shown.as_slice(), key.preset.value()) {
                ([], None) => {}
                ([one], Some(v)) => {
                    let read = privlogit::settings::read_as(key, &toml::Value::String(one.clone()));
                    assert_eq!(read, Ok(v), "{}", key.name);
                    shown_any += 1;
                }
                (shown, default) => panic!(
                    "{}: shows {shown:?}, the registry has {default:?}",
                    key.name
                ),
            }
        }
        // lambda, high_lambda, eta, k, combiner, low_fraction, noise_share, lambda_iw,
        // prior_sd_floor.
        assert_eq!(shown_any, 9);
    }

    #[test]
    fn flag_defaults_are_the_librarys() {
        for reader in [
            Reader::Fit,
            Reader::Study,
            Reader::KeyHolder,
            Reader::Aggregator,
            Reader::Node,
        ] {
            let command = add(Command::new("x"), reader);
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                let Some(key) = privlogit::settings::find(id) else {
                    continue;
                };
                let shown: Vec<String> = arg
                    .get_default_values()
                    .iter()
                    .map(|v| v.to_string_lossy().into_owned())
                    .collect();
                let default = Spec::default().get(key.name);
                match (shown.as_slice(), default) {
                    ([], None) => {}
                    ([], Some(_)) if key.kind == Kind::Switch || key.many => {}
                    ([one], Some(v)) => {
                        let mut spec = Spec::new(reader);
                        spec.set(
                            key.name,
                            &toml::Value::String(one.clone()),
                            privlogit::settings::Origin::Given,
                        )
                        .expect("the shown default parses");
                        assert_eq!(spec.get(key.name), Some(v), "{id}");
                    }
                    (shown, default) => {
                        panic!("{id}: shows {shown:?}, the library has {default:?}")
                    }
                }
            }
        }
    }
}
