#!/usr/bin/env bash
# The tests that use moto (tests/tests/aws.rs, and the barrier and batch suites, which run on
# both backends): the test command with a narrower `cargo test`. Extra arguments are a test-name
# filter and cargo test options:
#
#   tests/moto.sh                 # every AWS test
#   tests/moto.sh end_to_end      # only those whose name has "end_to_end"
exec "$(dirname "$0")/run.sh" -p native-tests --test aws --test barrier --test batch -- "$@"
