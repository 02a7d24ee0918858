"""The environments: raw task logic only (data, prompt, scoring); integrity lives in gym_integrity.wrappers."""
