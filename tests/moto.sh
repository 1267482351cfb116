#!/usr/bin/env bash
# The tests that use moto (tests/tests/aws.rs, and the aws:: variants of the files that run on
# both backends): the test command with a narrower `cargo test`. Extra arguments are test-name
# filters (a test runs when its name has any of them) and test binary options:
#
#   tests/moto.sh                 # every AWS test (names with `aws::`)
#   tests/moto.sh end_to_end      # only those whose name has "end_to_end"
[ "$#" -gt 0 ] || set -- aws::
exec "$(dirname "$0")/run.sh" -p native-tests --test integration -- "$@"
