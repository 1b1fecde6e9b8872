package main

import (
	"context"
	"errors"
	"regexp"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// codeNames spells gRPC codes as the gRPC status names (the tests' and the simulator's spelling).
var codeNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// statusOf is the gRPC code name and the message of the status an error carries (the innermost
// status's own message, without what the client wrapped around it); an error that carries no status
// is CLIENT_ERROR with its text (the client refused what it received, e.g. "spec is missing").
func statusOf(err error) (string, string) {
	var withStatus interface{ GRPCStatus() *status.Status }

	if errors.As(err, &withStatus) {
		st := withStatus.GRPCStatus()

		name, ok := codeNames[st.Code()]
		if !ok {
			name = st.Code().String()
		}

		return name, st.Message()
	}

	// The COSI client wraps some statuses in its own error types (eNotFound, eConflict) without Unwrap:
	// their text is still the status's.
	if m := rpcErrorText.FindStringSubmatch(err.Error()); m != nil {
		if name, ok := codeNamesByString[m[1]]; ok {
			return name, m[2]
		}
	}

	if errors.Is(err, context.DeadlineExceeded) {
		return "DEADLINE_EXCEEDED", err.Error()
	}

	return "CLIENT_ERROR", err.Error()
}

var rpcErrorText = regexp.MustCompile(`(?s)^rpc error: code = (\w+) desc = (.*)$`)

// codeNamesByString: `PermissionDenied` (codes.Code.String, in grpc-go's error text) → PERMISSION_DENIED.
var codeNamesByString = func() map[string]string {
	out := map[string]string{}
	for c, name := range codeNames {
		out[c.String()] = name
	}

	return out
}()

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// isUUID tells an actor ID or a boot ID.
func isUUID(s string) bool { return uuidPattern.MatchString(s) }

// poll calls check every 25 ms until it answers true or the deadline passes (false then).
func poll(ctx context.Context, within time.Duration, check func(context.Context) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()

	for {
		if check(ctx) {
			return true
		}

		select {
		case <-ctx.Done():
			return false
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// short is a context for one call.
func short(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 5*time.Second)
}
