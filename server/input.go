package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// A call of a client of the 2026-07-28 era that asks the client for input
// (tools.Context's Elicit and CreateMessage) cannot wait for the answer:
// the era has no server→client requests. It is answered input_required
// instead, with the question and a requestState, and rolled back; the
// client retries it with the answer and the state, and it runs again from
// the start, its earlier questions answered from the state (see
// tools.Client). The state is signed with the server's key (HMAC-SHA-256),
// bound to the tool, the arguments and the caller, and expires: a state
// the server did not issue, one for another call, or an old one is
// refused.
const (
	// inputStateTTL is how long a requestState may be brought back.
	inputStateTTL = 15 * time.Minute
	// maxInputRounds is how many questions one call may ask a client of
	// the 2026-07-28 era, as the SDKs bound their retries.
	maxInputRounds = 10
	// maxRequestState bounds an encoded requestState, in bytes: the
	// answers it carries from round to round are the client's.
	maxRequestState = 64 << 10
)

// newStateKey returns a random key for requestStates, good for this
// process only.
func newStateKey() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return key
}

// inputState is what a requestState carries from one round of a call to
// the next: which call it belongs to, until when, a digest of every
// question asked, and the answers to all but the last, which the retry
// answers.
type inputState struct {
	Tool    string            `json:"tool"`
	Args    []byte            `json:"args"`             // SHA-256 of the arguments
	Caller  string            `json:"caller,omitempty"` // the principal
	Expires int64             `json:"exp"`              // Unix seconds
	Asked   [][]byte          `json:"asked"`
	Answers []json.RawMessage `json:"answers,omitempty"`
}

// inputBinding names the call a requestState belongs to: the hash of its
// arguments is taken only when a requestState is read or sealed, which a
// call that asks nothing of its client never has.
type inputBinding struct {
	tool      string
	raw       json.RawMessage
	principal string
}

func bindInput(tool string, args json.RawMessage, principal string) inputBinding {
	return inputBinding{tool: tool, raw: args, principal: principal}
}

// args returns the SHA-256 of the arguments.
func (b inputBinding) args() []byte {
	sum := sha256.Sum256(b.raw)
	return sum[:]
}

// seal encodes st as a requestState: its JSON and its MAC, each base64url.
func seal(key []byte, st inputState) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	s := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac(key, payload))
	if len(s) > maxRequestState {
		return "", fmt.Errorf("the answers to its questions so far exceed %d KiB", maxRequestState>>10)
	}
	return s, nil
}

func mac(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(payload)
	return h.Sum(nil)
}

// errRequestState begins the message of every refused requestState.
var errRequestState = errors.New("invalid requestState")

// resume checks the requestState and the inputResponses a retried call
// brought, and returns the answers it is to run with: nil for a call that
// brought neither.
func resume(key []byte, b inputBinding, p mcp.MultiRoundTripParams, now time.Time) (*answers, error) {
	if p.RequestState == "" {
		if len(p.InputResponses) > 0 {
			return nil, fmt.Errorf("%w: inputResponses came without the requestState they answer", errRequestState)
		}
		return nil, nil
	}
	if len(p.RequestState) > maxRequestState {
		return nil, fmt.Errorf("%w: longer than %d KiB", errRequestState, maxRequestState>>10)
	}
	enc, sig, _ := strings.Cut(p.RequestState, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(enc)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(got, mac(key, payload)) {
		return nil, fmt.Errorf("%w: this server did not issue it (or has restarted since, with another key); call the tool again without it", errRequestState)
	}
	var st inputState
	if err := json.Unmarshal(payload, &st); err != nil || len(st.Asked) != len(st.Answers)+1 {
		return nil, fmt.Errorf("%w: malformed", errRequestState)
	}
	switch {
	case st.Tool != b.tool || !bytes.Equal(st.Args, b.args()) || st.Caller != b.principal:
		return nil, fmt.Errorf("%w: it belongs to another call (another tool, other arguments or another caller)", errRequestState)
	case now.Unix() > st.Expires:
		return nil, fmt.Errorf("%w: it expired at %s; call the tool again without it", errRequestState, time.Unix(st.Expires, 0).UTC().Format(time.RFC3339))
	}
	id := inputID(len(st.Answers))
	r, ok := p.InputResponses[id]
	if !ok {
		return nil, fmt.Errorf("%w: inputResponses has no answer to %q", errRequestState, id)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%w: the answer to %q: %v", errRequestState, id, err)
	}
	return &answers{asked: st.Asked, given: append(st.Answers, raw)}, nil
}

// inputID is the id of a call's question k (from 0) in inputRequests.
func inputID(k int) string { return "wink-" + strconv.Itoa(k+1) }

// answers are the answers a call of a client of the 2026-07-28 era runs
// with, in the order it asked for them, and the digests of its questions.
type answers struct {
	asked [][]byte
	given []json.RawMessage
}

// asking answers the questions of one run of a call of a client of the
// 2026-07-28 era: from the answers it brought, in order, until the first
// question without one, which it keeps as the call's pending question.
type asking struct {
	mu      sync.Mutex
	answers answers
	next    int
	pending *mcp.InputRequest
}

// ask returns the answer to req, the run's next question, or
// tools.ErrInputRequired when the client has not given it yet.
func (a *asking) ask(req mcp.InputRequest) (json.RawMessage, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.next
	a.next++
	switch {
	case k < len(a.answers.given):
		if !bytes.Equal(a.answers.asked[k], sum[:]) {
			return nil, errors.New("the call asked the client something else when it ran again with the answers: a handler must ask the same questions in the same order")
		}
		return a.answers.given[k], nil
	case a.pending != nil:
		return nil, tools.ErrInputRequired
	case k >= maxInputRounds:
		return nil, fmt.Errorf("the call asked the client more than %d questions", maxInputRounds)
	}
	a.pending = &req
	a.answers.asked = append(a.answers.asked[:k:k], sum[:])
	return nil, tools.ErrInputRequired
}

// question returns the run's pending question and the state that brings
// its earlier answers back with the client's answer, or ok false when no
// question is pending.
func (a *asking) question(key []byte, b inputBinding, now time.Time) (mcp.InputRequests, string, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		return nil, "", false, nil
	}
	k := len(a.answers.asked) - 1
	state, err := seal(key, inputState{
		Tool: b.tool, Args: b.args(), Caller: b.principal,
		Expires: now.Add(inputStateTTL).Unix(),
		Asked:   a.answers.asked,
		Answers: a.answers.given[:k],
	})
	return mcp.InputRequests{inputID(k): *a.pending}, state, true, err
}

// isPending reports whether the run has asked a question it has no answer
// to.
func (a *asking) isPending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending != nil
}

// inputPending returns the question call left pending and the
// requestState of its retry, or pending false when it asked none it has
// no answer to (or its client is of the 2025-11-25 era).
func inputPending(call *tools.Call, key []byte, b inputBinding, now time.Time) (asked mcp.InputRequests, state string, pending bool, err error) {
	cl, ok := call.Client.(*client)
	if !ok || cl.asking == nil {
		return nil, "", false, nil
	}
	return cl.asking.question(key, b, now)
}

// awaitsInput is the outcome of a run of call that asked its client a
// question it has no answer to, whatever the handler returned: the call is
// rolled back, and answered input_required. Nil when it asked none.
func awaitsInput(call *tools.Call) *tools.Outcome {
	cl, ok := call.Client.(*client)
	if !ok || cl.asking == nil || !cl.asking.isPending() {
		return nil
	}
	o := tools.Failure(tools.ClassInputRequired, fmt.Sprintf("Tool '%s' needs the client's answer; it runs again with it.", call.Tool.Name()))
	o.Err = tools.ErrInputRequired
	return o
}
