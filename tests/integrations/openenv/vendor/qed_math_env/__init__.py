# Vendored from https://github.com/meta-pytorch/OpenEnv, path envs/qed_math_env/__init__.py, at commit
# 389980d73452a892dba6a9af52faab09c2f0d285 (the head of the qed_math_env pull request, refs/pull/446).
# Below the marker line the file is upstream's byte for byte: test_upstream_qed_client.py checks its git blob id
# (98de9605bc51987a130e1190aa780d1594f8c82f, as upstream's tree lists it),
# so an edit here fails CI. Never edit below the marker.
# ---- upstream file below ----
# Copyright (c) Meta Platforms, Inc. and affiliates.
# All rights reserved.
#
# This source code is licensed under the BSD-style license found in the
# LICENSE file in the root directory of this source tree.

"""QED Math Environment."""

from .client import QEDMathEnv
from .models import (
    GetGradingGuidelines,
    GetProblem,
    ProblemObservation,
    ProofSubmissionObservation,
    QEDMathAction,
    QEDMathObservation,
    SubmitProof,
)

__all__ = [
    "QEDMathAction",
    "QEDMathObservation",
    "QEDMathEnv",
    "SubmitProof",
    "GetProblem",
    "GetGradingGuidelines",
    "ProblemObservation",
    "ProofSubmissionObservation",
]
