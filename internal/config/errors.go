package config

import (
	"strconv"
	"strings"
)

// FileError is a problem with a file Handset reads: a missing --config or --env-file, YAML that
// does not parse, an unknown YAML key, a malformed dotenv line. Path is as the user gave it;
// Line is 1-based, or 0 when the problem is with the whole file.
type FileError struct {
	Path string
	Line int
	Msg  string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		if e.Path != "" {
			b.WriteByte(':')
		} else {
			b.WriteString("line ")
		}
		b.WriteString(strconv.Itoa(e.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// FieldError is one bad setting.
type FieldError struct {
	Env  string // environment variable, e.g. HANDSET_STT
	YAML string // YAML key, e.g. stt.provider
	// Value is the offending value as written. It is empty for secrets, which are never shown,
	// and for values that are missing rather than wrong.
	Value string
	// Reason says what is wrong and, where it helps, how to fix it. It reads on after the
	// quoted value: "is not one of deepgram, openai, sphinx".
	Reason string
	Origin Origin // where the value came from
	// Suggest is the allowed value closest to a mistyped choice ("deepgram" for "deepgrm"),
	// or "". Reason already mentions it; it is here for fixes that name the value to set.
	Suggest string
}

// Error renders the problem on one line, e.g.
//
//	HANDSET_STT (stt.provider): "deepgramm" is not one of deepgram, openai, sphinx (from environment)
func (e FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Env)
	b.WriteString(" (")
	b.WriteString(e.YAML)
	b.WriteString("): ")
	if e.Value != "" {
		b.WriteString(strconv.Quote(e.Value))
		b.WriteByte(' ')
	}
	b.WriteString(e.Reason)
	if e.Origin.Kind != FromDefault {
		b.WriteString(" (from ")
		b.WriteString(e.Origin.String())
		b.WriteByte(')')
	}
	return b.String()
}

// ValidationError carries every problem Validate found, in settings-table order followed by the
// checks that involve several settings. Error prints one problem a line.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each FieldError to errors.As and errors.Is.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}
