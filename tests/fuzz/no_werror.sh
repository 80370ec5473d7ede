#!/bin/sh
# Compiler launcher for the fuzz build: clang warns about things gcc does not,
# and other modules' warnings must not stop the parser's fuzzing.
exec "$@" -Wno-error
