#!/bin/bash
# Runs one of this folder's scripts from the repository root: tests/reliability/hunt_session61/run.sh <script>.py [args]
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../../.." && PYTHONPATH=python:tests/python:tests:"$here" python3 "$here/$1" "${@:2}"
