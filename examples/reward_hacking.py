"""Watch a policy learn to hack the raw env's reward, and fail to on the stacked one (REINFORCE, seconds on a CPU).

    python examples/reward_hacking.py                      # writes reward_hacking.png
    python examples/reward_hacking.py --iterations 200 --plot out.png

The demo lives in the package (``gym_integrity.demos.reward_hacking``, where its
docstring explains the four strategies), so that it also runs from an
installed wheel: ``python -m gym_integrity.demos.reward_hacking``.
"""

from gym_integrity.demos.reward_hacking import main

if __name__ == "__main__":
    main()
