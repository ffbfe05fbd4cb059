// Package scripttest tests the scripts a newcomer runs first (scripts/setup.sh,
// scripts/test.sh and what they call) by running copies of them in a temporary directory
// with stand-ins on PATH: a go command that reports a chosen version, apt and PostgreSQL
// stand-ins. Nothing is installed, nothing reaches the network, and the real checkout
// (its .cache, bin and PostgreSQL cluster) is not touched.
//
// SCRIPTTEST_SCRIPTS names another scripts directory to test instead of the checkout's
// (an older version, to see the tests fail on it).
package scripttest
