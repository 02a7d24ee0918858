"""Adapters to trainers and frameworks, each an optional extra that imports its library only when used.

* :mod:`gym_integrity.integrations.trl`: TRL's ``GRPOTrainer`` (``pip install "gym-integrity[trl]"``).
"""
