//! A study's protocol-level plan from its settings: the checks that make it runnable (the key
//! size, lambda, tolerances, the protocol and optimiser going together, the penalty's centre)
//! in one place, so that every role and front end refuses alike.

use privlogit_protocols::optimizer::Optimizer;
use privlogit_protocols::secure::aggregator::Protocol;
use privlogit_protocols::secure::perturbation::Release;
use privlogit_protocols::secure::solver::LinearAlgebra;
use privlogit_protocols::secure::study_protocol::StudyPlan;
use privlogit_protocols::{FitOptions, Initial};

use super::centre;
use crate::error::{Error, PlanError, SettingProblem};
use crate::settings::Spec;

/// Paillier modulus sizes a key holder makes.
pub const KEY_SIZES: [u32; 3] = [2048, 3072, 4096];

impl Spec {
    /// The optimiser the settings ask for: `protocol = "newton"` and `optimizer = "newton"`
    /// imply each other (whichever is given), and Anderson's memory applies to the
    /// accelerated one.
    pub fn resolved_optimizer(&self, secure: bool) -> Result<(Protocol, Optimizer), Error> {
        let newton_protocol = self.protocol == Protocol::Newton;
        let newton_optimizer = self.optimizer == Optimizer::Newton;
        if !self.family.has_constant_bound() {
            // Poisson's information has no constant bound; the Gaussian's is constant, so
            // Newton's first step is the solution and PrivLogit would add nothing.
            let chosen = [
                (
                    "protocol",
                    !newton_protocol,
                    Spec::protocol_name(self.protocol),
                ),
                ("optimizer", !newton_optimizer, self.optimizer.name()),
            ]
            .into_iter()
            .find(|(name, other, _)| *other && (self.given(name) || self.given("accelerate")));
            if let Some((name, _, value)) = chosen {
                return Err(self.bad(
                    name,
                    SettingProblem::Family {
                        given: Some(value),
                        family: self.family,
                        why: ", which is fitted by Newton's method (PrivLogit's constant bound \
                              on the information exists for the binomial only): give newton or \
                              leave it out",
                    },
                ));
            }
            return Ok((Protocol::Newton, Optimizer::Newton));
        }
        let optimizer = match self.optimizer {
            Optimizer::AcceleratedPrivLogit { .. } => Optimizer::AcceleratedPrivLogit {
                memory: self.memory,
            },
            other => other,
        };
        if !secure || newton_protocol == newton_optimizer {
            return Ok((self.protocol, optimizer));
        }
        let (protocol_rank, optimizer_rank) = (self.rank("protocol"), self.rank("optimizer"));
        if protocol_rank == optimizer_rank && protocol_rank > 0 {
            return Err(if self.given("accelerate") && newton_protocol {
                Error::refused("setting `accelerate` applies to hessian and local only")
            } else {
                PlanError::NotWith {
                    setting: "optimizer",
                    value: self.optimizer.name(),
                    other: "protocol",
                    other_value: Spec::protocol_name(self.protocol),
                    why: " (Newton is its own protocol)",
                }
                .into()
            });
        }
        Ok(if protocol_rank > optimizer_rank {
            // The protocol was chosen (or chosen later, on the command line over the file):
            // Newton's protocol runs Newton; PrivLogit's run the default PrivLogit.
            if newton_protocol {
                (self.protocol, Optimizer::Newton)
            } else {
                let default = Spec::default();
                (
                    self.protocol,
                    Spec {
                        memory: self.memory,
                        ..default
                    }
                    .resolved_optimizer(false)?
                    .1,
                )
            }
        } else if newton_optimizer {
            // The optimiser was chosen: Newton runs on its protocol.
            (Protocol::Newton, Optimizer::Newton)
        } else {
            (Spec::default().protocol, optimizer)
        })
    }

    /// The fit's options: penalty, stopping rule, start, the penalty's centre read from its
    /// file. `secure` studies stop by the relative-change rule when the gradient's cannot run
    /// (the circuit method) and the user chose neither.
    pub fn fit_options(&self, secure: bool) -> Result<FitOptions, Error> {
        let centre = match (&self.penalty_centre, &self.transfer_from) {
            (Some(file), _) => Some(centre::read(file)?),
            (None, Some(model)) => Some(centre::transfer_centre(model, self.eta)?.0),
            (None, None) => None,
        };
        for (name, value) in [("tol", self.tol), ("gradient_tol", self.gradient_tol)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(self.bad(
                    name,
                    SettingProblem::BelowLeast {
                        value,
                        least: 0.0,
                        note: " and finite (0 turns the rule off)",
                    },
                ));
            }
        }
        let mut tol = self.tol;
        let mut gradient = (self.gradient_tol > 0.0).then_some(self.gradient_tol);
        let stopping_chosen = self.given("tol") || self.given("gradient_tol");
        if secure && self.linear_algebra == LinearAlgebra::Circuit && !stopping_chosen {
            // The gradient-norm test squares the gradient in masked arithmetic.
            gradient = None;
            tol = 1e-6;
        }
        if secure && self.dp_epsilon.is_some() && !self.given("gradient_tol") {
            // Secure PLR stops on the gradient alone, by default close enough to the
            // minimiser for its guarantee (`release::default_gradient_tolerance`).
            gradient = None;
        }
        let options = FitOptions::new()
            .lambda(self.lambda)
            // Without an intercept there is nothing to free (the first column is a feature).
            .free_intercept(self.free_intercept && self.intercept())
            .relative_tolerance(tol)
            .gradient_tolerance(gradient)
            .max_iterations(self.max_iter)
            .step_halving(!self.family.has_constant_bound())
            // A secure vertical study's Nodes deal PrivLogit's products only: no finish there,
            // nor in its plaintext reference (`fit --vertical`), so the two take one path.
            .newton_finish(!self.no_newton_finish && !self.vertical)
            .initial(self.init.map_or(Initial::Zeros, Initial::Constant))
            .penalty_centre(centre);
        options.validate()?;
        Ok(options)
    }

    /// The plan of a vertical study of `parties`: the study's settings, PrivLogit (plain or
    /// accelerated) with the bound formed between the servers, or secure Newton with the
    /// information formed between them every iteration; the coefficients revealed.
    pub fn vertical_plan(&self, parties: usize) -> Result<StudyPlan, Error> {
        let spec = self;
        if spec.given("protocol") && !matches!(spec.protocol, Protocol::Hessian | Protocol::Newton)
        {
            return Err(self.bad(
                "protocol",
                SettingProblem::Refused {
                    why: "is refused: a vertical study runs PrivLogit-Hessian (the bound formed \
                          between the two servers) or secure Newton; PrivLogit-Local would need \
                          each party's rows whole",
                },
            ));
        }
        if spec.given("reveal") && spec.reveal != crate::inference::Reveal::Coefficients {
            return Err(self.bad(
                "reveal",
                SettingProblem::Refused {
                    why: "is refused: a vertical study reveals its coefficients only (its \
                          standard errors are not built)",
                },
            ));
        }
        if spec.site_intercepts {
            return Err(self.bad(
                "site_intercepts",
                SettingProblem::Refused {
                    why: "is refused: a vertical study's parties hold different columns of the same \
                          people, not sites with baselines of their own",
                },
            ));
        }
        if !spec.drop.is_empty() {
            return Err(self.bad(
                "drop",
                SettingProblem::Refused {
                    why: "is refused: a vertical study's nested model (the likelihood-ratio test) \
                          is not built",
                },
            ));
        }
        let mut plan = spec.study_plan(parties)?;
        if !matches!(plan.optimizer, Optimizer::Newton) {
            // The bound is formed between the servers: PrivLogit-Hessian, whatever the horizontal
            // default.
            plan.protocol = Protocol::Hessian;
        }
        plan.reveal = crate::inference::Reveal::Coefficients;
        privlogit_protocols::secure::vertical_roles::check_plan(&plan)?;
        Ok(plan)
    }

    /// Refuses a setting given where nothing reads it (it would be ignored without a word):
    /// `id` without `vertical`, PLR's and transfer's settings without `dp_epsilon`, `eta`
    /// without `transfer_from`.
    fn refuse_idle_settings(&self) -> Result<(), Error> {
        let idle = [
            (
                "id",
                !self.vertical,
                "needs setting `vertical` (it names the column that links a vertical study's rows)",
            ),
            (
                "dp_lambda",
                self.dp_epsilon.is_none(),
                "needs setting `dp_epsilon` (it is PLR's lambda in a differentially private study)",
            ),
            (
                "transfer_from",
                self.dp_epsilon.is_none(),
                "needs setting `dp_epsilon` (hypothesis transfer centres a differentially private study's penalty)",
            ),
            (
                "eta",
                self.transfer_from.is_none(),
                "needs setting `transfer_from` (it weighs closeness to the source model)",
            ),
        ];
        match idle
            .into_iter()
            .find(|(key, idle, _)| *idle && self.given(key))
        {
            Some((key, _, why)) => Err(self.bad(key, SettingProblem::Refused { why })),
            None => Ok(()),
        }
    }

    /// The plan of a study whose parties all run in this process (`privlogit study`, Python's
    /// `study`): the same as between organizations ([`Self::study_plan`]), so that what a user
    /// times in one process is what a consortium deploys. (Until the fourth wave one process
    /// planned PrivLogit-Hessian over a dealer thread's correlations, a configuration no
    /// consortium could run.)
    pub fn in_process_plan(&self, parties: usize) -> Result<StudyPlan, Error> {
        self.study_plan(parties)
    }

    /// The secure study's plan for `parties` Nodes, validated.
    pub fn study_plan(&self, parties: usize) -> Result<StudyPlan, Error> {
        self.refuse_idle_settings()?;
        let (protocol, optimizer) = self.resolved_optimizer(true)?;
        optimizer.validate()?;
        if !KEY_SIZES.contains(&self.key_bits) {
            return Err(self.bad(
                "key_bits",
                SettingProblem::KeyBits {
                    bits: u64::from(self.key_bits),
                },
            ));
        }
        if self.free_intercept && self.intercept() {
            return Err(Error::refused(
                "a secure study penalises every coefficient (its widths assume lambda on each): \
                 setting `free_intercept` is for the plaintext fit",
            ));
        }
        let options = self.fit_options(true)?;
        let release = self.dp_epsilon.map(|epsilon| Release {
            epsilon,
            lambda: self.dp_lambda,
        });
        let mut plan = StudyPlan {
            protocol,
            optimizer,
            options,
            format: self.fixed,
            key_bits: self.key_bits,
            parties,
            standardize: self.standardize,
            // PLR has no intercept: its rows are scaled onto the unit sphere.
            intercept: self.intercept() && release.is_none(),
            linear_algebra: self.linear_algebra,
            circuit_block: self.checked_circuit_block()?,
            mask_seed: self.seed,
            // Standard errors by default, where they can be had: a DP release publishes its
            // coefficients only, and the circuit method has no masked inverse.
            reveal: if self.given("reveal")
                || (release.is_none() && self.linear_algebra == LinearAlgebra::Masked)
            {
                self.reveal
            } else {
                crate::inference::Reveal::Coefficients
            },
            release,
            glm: crate::fit::GlmColumns::of(self)?.glm(),
            evaluate: self.evaluate || !self.test_party.is_empty(),
        };
        plan.validate()?;
        if !self.vertical {
            self.check_two_nodes(&mut plan)?;
        }
        Ok(plan)
    }

    /// The circuit blocks' side, refused outside 1 to the largest block the key holder serves.
    fn checked_circuit_block(&self) -> Result<usize, Error> {
        let most = privlogit_protocols::secure::masked::block_leaf::MAX_BLOCK;
        if (1..=most).contains(&self.circuit_block) {
            return Ok(self.circuit_block);
        }
        Err(self.bad(
            "circuit_block",
            SettingProblem::OutOfRange {
                value: self.circuit_block as f64,
                low: 1.0,
                high: most as f64,
                closed: true,
            },
        ))
    }

    /// With two Nodes each learns the other's sums from anything pooled it sees beyond the
    /// coefficients (by subtracting its own): unless the study file says
    /// `two_node_disclosure = true`, standardisation and held-out evaluation are refused and
    /// the inference round is left out (refused when asked for by name).
    fn check_two_nodes(&self, plan: &mut StudyPlan) -> Result<(), Error> {
        let d = &self.disclosure();
        let refuse = |setting: &'static str, what: &'static str| match d
            .check_two_nodes(plan.parties, what)
        {
            Some(_) => Err(self.bad(setting, SettingProblem::TwoNodes { what })),
            None => Ok(()),
        };
        if plan.standardize {
            refuse("standardize", "the pooled means and scales")?;
        }
        if plan.evaluate {
            // In one process the held-out rows ask for the evaluation themselves.
            let setting = if self.given("evaluate") {
                "evaluate"
            } else {
                "test_party"
            };
            refuse(setting, "a held-out evaluation")?;
        }
        if !self.drop.is_empty() {
            refuse(
                "drop",
                "both models' log-likelihoods (the likelihood-ratio test)",
            )?;
        }
        if plan.reveal != crate::inference::Reveal::Coefficients
            && d.check_two_nodes(plan.parties, "").is_some()
        {
            if self.given("reveal") {
                refuse("reveal", "standard errors and the likelihood")?;
            }
            plan.reveal = crate::inference::Reveal::Coefficients;
        }
        Ok(())
    }
}

/// One line on what a plan runs, for the start of a study.
pub fn describe(plan: &StudyPlan, nodes: usize) -> String {
    let stop = &plan.options.stopping;
    let mut rules = Vec::new();
    if let Some(g) = stop.gradient_tolerance {
        rules.push(format!("gradient norm < {g:e}"));
    }
    if stop.relative_tolerance > 0.0 {
        rules.push(format!("relative change < {:e}", stop.relative_tolerance));
    }
    format!(
        "secure study: {} Nodes, protocol {:?}, optimizer {}, {}-bit Paillier key, values at {} \
         fractional bits, circuits {}/{}; stops at {}",
        nodes,
        plan.protocol,
        plan.optimizer,
        plan.key_bits,
        plan.paillier_frac(),
        plan.format.width(),
        plan.format.frac(),
        if rules.is_empty() {
            "the default gradient norm of secure PLR".to_string()
        } else {
            rules.join(" or ")
        }
    )
}
