"""privlogit.accounting against Google's dp-accounting, live (pip install dp-accounting==0.6.0;
CI installs it), and against the closed forms of basic and advanced composition and
amplification. Tolerance 1e-9 relative: both sides sum the same series in log space in f64
(the Rust tests measured 1e-11)."""
import math

import pytest

from privlogit import accounting


def test_closed_forms():
    assert accounting.basic_composition(0.5, 1e-6, 10) == (5.0, 10 * 1e-6)
    eps, delta = accounting.advanced_composition(0.1, 0.0, 100, 1e-5)
    assert eps == pytest.approx(math.sqrt(200 * math.log(1e5)) * 0.1 + 100 * 0.1 * math.expm1(0.1), rel=1e-15)
    assert delta == 1e-5
    eps, delta = accounting.amplified(1.0, 1e-6, 0.01)
    assert eps == pytest.approx(math.log1p(0.01 * math.expm1(1.0)), rel=1e-15) and delta == pytest.approx(1e-8)


def test_refusals_name_the_parameter():
    import privlogit

    with pytest.raises(privlogit.PrivlogitError, match="q"):
        accounting.amplified(1.0, 0.0, 1.5)
    with pytest.raises(privlogit.PrivlogitError, match="delta"):
        accounting.gaussian_rdp(1.0, 0.01, 10, 0.0)


@pytest.mark.parametrize("q,sigma,steps,delta", [(0.01, 1.1, 1000, 1e-5), (0.004, 1.3, 60000, 1e-5), (1.0, 5.0, 100, 1e-5)])
def test_rdp_equals_dp_accounting(q, sigma, steps, delta):
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting import rdp

    orders = list(range(2, 65)) + [128, 256, 512, 1024]
    acc = rdp.RdpAccountant(orders=orders)
    event = dp_accounting.GaussianDpEvent(sigma)
    if q < 1.0:
        event = dp_accounting.PoissonSampledDpEvent(q, event)
    acc.compose(event, steps)
    theirs, their_order = acc.get_epsilon_and_optimal_order(delta)
    ours, our_order = accounting.gaussian_rdp(sigma, q, steps, delta)
    assert ours == pytest.approx(theirs, rel=1e-9)
    assert our_order == their_order
