package doctor

// EngineSetupFix is the fix of every check that finds an offline engine missing from the
// binary: how the engines get installed and linked in.
const EngineSetupFix = "run ./scripts/setup.sh (it installs the Debian packages and npm artefacts and builds with -tags embedded)"
