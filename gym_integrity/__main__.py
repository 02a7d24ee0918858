"""`python -m gym_integrity` runs the gym-integrity command."""

from gym_integrity.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
