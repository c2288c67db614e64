"""Type stubs of `privlogit._native`, the Rust extension (built by maturin from python/src)."""
from os import PathLike
from typing import Any, Optional, Sequence, Tuple, Union, final

import numpy as np
import numpy.typing as npt

_Path = Union[str, PathLike[str]]
_Floats2 = npt.NDArray[np.float64]
_Floats1 = npt.NDArray[np.float64]
_Party = Tuple[_Floats2, _Floats1]
_Phe = Tuple[str, int]

__all__ = [
    "defaults", "fit", "study", "keyholder", "aggregator", "node", "dealer", "predict_model", "load_model", "Keypair", "Floats", "load_table", "summary", "dp_fit", "dp_dphtl",
    "ledger_total", "ledger_spent", "DpModel", "PrivlogitError", "DataError", "SettingError",
    "NetworkError", "EstimationError", "BudgetExceeded",
    "dpstgd", "sparse_gaussian", "DeepModel", "basic_composition", "advanced_composition", "amplified",
    "gaussian_rdp", "gaussian_zcdp", "partition_answer", "row_sums",
]

class PrivlogitError(ValueError): ...
class DataError(PrivlogitError): ...
class SettingError(PrivlogitError): ...
class NetworkError(PrivlogitError): ...
class EstimationError(PrivlogitError): ...
class BudgetExceeded(PrivlogitError): ...

@final
class Floats:
    """Float64 memory handed to numpy without a copy (buffer protocol)."""

def load_table(path: _Path, label: str, family: str = ...) -> Tuple[Floats, Tuple[int, int], Floats, list[str]]: ...
_Named = Tuple[_Floats2, _Floats1, Sequence[str]]

def defaults(reader: str) -> dict[str, Any]: ...
def summary(result: str) -> str: ...
def fit(parties: Sequence[_Named], given: dict[str, Any]) -> str: ...
def study(parties: Optional[Sequence[Any]], given: dict[str, Any], study: Optional[_Path] = None) -> str: ...
def keyholder(study: _Path, given: dict[str, Any]) -> dict[str, Any]: ...
def dealer(study: _Path, given: dict[str, Any]) -> None: ...
def aggregator(study: _Path, given: dict[str, Any]) -> str: ...
def node(study: _Path, given: dict[str, Any], data: Optional[Any] = None) -> dict[str, Any]: ...
def partition_answer(
    request: bytes, offset: int, columns: Sequence[_Floats1], y: _Floats1, names: Sequence[str], source: str
) -> bytes: ...
def row_sums(
    data: Any, kind: str, beta: Optional[Sequence[float]] = None, label: Optional[str] = None
) -> list[float]: ...
def predict_model(
    names: Sequence[str],
    coef: Sequence[float],
    x: _Floats2,
    mean: Optional[Sequence[float]] = None,
    scale: Optional[Sequence[float]] = None,
    family: str = "binomial",
) -> list[float]: ...

def load_model(path: _Path) -> Union[tuple[str, str], tuple[str, DpModel, list[str]]]: ...

@final
class Keypair:
    def __new__(cls, bits: int = 2048) -> Keypair: ...
    @property
    def n(self) -> str: ...
    def export_primes(self) -> Tuple[str, str]: ...
    def encrypt(self, x: float, bound: float = 1e12) -> _Phe: ...
    def decrypt(self, number: _Phe, bound: float = 1e12) -> float: ...
    def add(self, a: _Phe, b: _Phe, bound: float = 1e12) -> _Phe: ...
    def mul(self, a: _Phe, k: float, bound: float = 1e12) -> _Phe: ...

@final
class DpModel:
    @property
    def method(self) -> str: ...
    @property
    def w(self) -> Optional[list[float]]: ...
    def to_json(self) -> str: ...
    def predict_proba(self, x: _Floats2) -> list[float]: ...

def dp_fit(
    method_name: str,
    x: _Floats2,
    y: _Floats1,
    epsilon: float,
    source: Optional[_Party] = None,
    ledger: Optional[_Path] = None,
    budget: Optional[float] = None,
    dataset: Optional[str] = None,
    source_dataset: Optional[str] = None,
    **options: Any,
) -> DpModel: ...
def dp_dphtl(
    sources: Sequence[_Party],
    public: _Floats2,
    x: _Floats2,
    y: _Floats1,
    epsilon: float,
    unlabelled: Optional[_Floats2] = None,
    lam: Optional[float] = None,
    lambda_iw: Optional[float] = None,
    sd_floor: Optional[float] = None,
    seed: Optional[int] = None,
    ledger: Optional[_Path] = None,
    budget: Optional[float] = None,
    source_datasets: Optional[Sequence[str]] = None,
) -> dict[str, Any]: ...
@final
class DeepModel:
    @property
    def sizes(self) -> list[int]: ...
    @property
    def parameters(self) -> list[float]: ...
    @property
    def traffic(self) -> list[Tuple[int, int]]: ...
    @property
    def spend(self) -> Optional[dict[str, Any]]: ...
    def predict_proba(self, x: _Floats2) -> list[float]: ...

def dpstgd(
    parties: Sequence[_Party],
    epsilon: Optional[float] = None,
    non_private: bool = False,
    q: float = ...,
    upload_ratio: float = ...,
    iterations: int = ...,
    bound: float = ...,
    learning_rate: float = ...,
    exact_upload: bool = False,
    hidden: Sequence[int] = ...,
    seed: Optional[int] = None,
    init: Optional[Sequence[float]] = None,
    delta: float = ...,
    budget: Optional[float] = None,
    accounting: str = ...,
    accept_unsound_accounting: bool = False,
) -> DeepModel: ...
def sparse_gaussian(
    parties: Sequence[_Party],
    epsilon: Optional[float] = None,
    non_private: bool = False,
    delta: float = ...,
    q: float = ...,
    upload_ratio: float = ...,
    iterations: Optional[int] = None,
    bound: float = ...,
    learning_rate: float = ...,
    hidden: Sequence[int] = ...,
    seed: Optional[int] = None,
    init: Optional[Sequence[float]] = None,
    budget: Optional[float] = None,
) -> DeepModel: ...
def ledger_total(path: _Path) -> float: ...
def ledger_spent(path: _Path, x: _Floats2, y: _Floats1) -> Tuple[float, float]: ...
def basic_composition(epsilon: float, delta: float, k: int) -> Tuple[float, float]: ...
def advanced_composition(epsilon: float, delta: float, k: int, slack: float) -> Tuple[float, float]: ...
def amplified(epsilon: float, delta: float, q: float) -> Tuple[float, float]: ...
def gaussian_rdp(
    sigma: float, q: float, steps: int, delta: float, orders: Optional[Sequence[int]] = None
) -> Tuple[float, int]: ...
def gaussian_zcdp(sigma: float, steps: int, delta: float) -> float: ...
