# SPDX-License-Identifier: MIT
"""python -m ranktrace: the same as the `ranktrace` command."""
import sys

from ranktrace import main

sys.exit(main())
