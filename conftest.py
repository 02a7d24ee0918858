"""pytest at the repository root: a package module whose optional extra is not installed is not collected.

The default suite collects every module of the package for its doctests; the
``[serve]`` integration imports openenv-core at import, so without that extra
it is left to ``.ci/run``'s ``[serve]`` step, which installs it.
"""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("openenv") is None:
    collect_ignore.append("gym_integrity/integrations/openenv")
