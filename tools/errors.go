package tools

import (
	"context"
	"errors"
	"fmt"
)

// Error classes of calls that failed before execution (parsing, validation,
// caps). They are the prefix of traj.ToolCall.ParseError.
const (
	ClassUnterminated = "unterminated" // the call's closing markup never came
	ClassBadJSON      = "bad_json"     // the call's JSON did not parse or had the wrong shape
	ClassUnknownTool  = "unknown_tool" // the named tool is not in the registry
	ClassSchema       = "schema"       // the arguments violate the tool's JSON Schema
	ClassTooLong      = "too_long"     // the call's text exceeded the parser's limit
	ClassOverCap      = "over_cap"     // the call came past the per-turn or per-trajectory cap
)

// Error classes of calls that were executed and failed (traj.ToolResult.ErrorClass).
const (
	ClassTimeout     = "timeout"      // the per-call deadline passed
	ClassCanceled    = "canceled"     // the caller's context was canceled
	ClassPanic       = "panic"        // the tool panicked; the panic was recovered
	ClassToolError   = "tool_error"   // the tool ran and reported an error
	ClassInvalidArgs = "invalid_args" // the arguments passed the schema but the tool rejected them
)

// IsParseClass reports whether class is one of the classes a call gets
// before execution (parse, validation or cap failures).
func IsParseClass(class string) bool {
	switch class {
	case ClassUnterminated, ClassBadJSON, ClassUnknownTool, ClassSchema, ClassTooLong, ClassOverCap:
		return true
	}
	return false
}

// Error is an error with a class. Tools return it (through InvalidArgs or
// Errorf) to choose the class the executor records; any other error is
// recorded as tool_error.
type Error struct {
	Class string
	Err   error
}

// Error implements error: "<class>: <detail>".
func (e *Error) Error() string { return e.Class + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// InvalidArgs wraps err as an invalid_args error: the arguments were well
// formed JSON of the right shape, but the tool cannot use them.
func InvalidArgs(err error) error { return &Error{Class: ClassInvalidArgs, Err: err} }

// Errorf returns an Error of the given class.
func Errorf(class, format string, args ...any) error {
	return &Error{Class: class, Err: fmt.Errorf(format, args...)}
}

// ClassOf returns the error class of err: the class of a wrapped *Error,
// timeout for context.DeadlineExceeded, canceled for context.Canceled, and
// tool_error otherwise. It returns "" for a nil error.
func ClassOf(err error) string {
	if err == nil {
		return ""
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Class
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, context.Canceled):
		return ClassCanceled
	}
	return ClassToolError
}
