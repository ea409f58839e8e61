import os
import sys

from bench.suite import main

main()
# Everything is written and every server stopped; the SDK's runtime threads have been seen to abort the
# interpreter's finalization afterwards ("Fatal Python error: PyGILState_Release", exit 134, in about half
# the runs), turning a finished bench into a failed command. Nothing is left to clean up: leave at once.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
