"""Small self-contained demos that ship with the package, so an installed wheel (a notebook, a script) runs them.

``gym_integrity.demos.reward_hacking``: a policy learns to hack the raw env's
reward and fails to on the stacked one (``examples/reward_hacking.py`` runs it).
Nothing here is imported by ``import gym_integrity``.
"""
