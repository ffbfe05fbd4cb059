// Package store is the contract for what Handset keeps beyond a call's journal: calls,
// their transcripts, callers' sessions (caller hash to agent session key), jobs with
// leases, and the nodes' heartbeats (so the calls of a node that died can be ended). Two
// implementations satisfy it, store/sqlite (the default, in the data dir) and
// store/postgres (HANDSET_DATABASE_URL, for several nodes); store/storetest is the
// conformance suite both pass.
//
// Jobs move pending -> running -> completed | failed. Every transition is a compare-and-set
// on the job's state, lease owner and version, so a node whose lease expired cannot
// overwrite the result of the node that reclaimed the job.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Errors every implementation returns (wrapped, test with errors.Is).
var (
	ErrNotFound   = errors.New("store: not found")
	ErrLeaseLost  = errors.New("store: the job is no longer leased to this owner") // expired and reclaimed, or finished
	ErrDuplicate  = errors.New("store: duplicate")                                 // an id or dedupe key already used
	ErrNotPending = errors.New("store: the job is no longer pending")              // Cancel lost the race to a claimer
)

// OutcomeNodeLost is the outcome of a call whose node stopped heartbeating while it ran
// (killed, or its machine lost): the call's media went with the node.
const OutcomeNodeLost = "node_lost"

// Call is one call as the store keeps it. From and To are raw numbers: the store is the
// only place they are kept (callbacks and the dashboard need them).
type Call struct {
	ID         voice.CallID
	Carrier    string
	CarrierRef string // the carrier's own id (Twilio CallSid)
	Direction  voice.Direction
	From, To   string
	CallerHash string
	Agent      string // runtime name
	Node       string // the Handset process that ran it
	StartedAt  time.Time
	EndedAt    time.Time // zero while the call runs
	Outcome    string    // the end reason ("caller_hangup", …); empty while it runs
	Journal    string    // where its events.jsonl is
	JobID      int64     // the job that placed it (outbound calls, deliveries); 0 for none
	// Summary is what the call's journal said of it when it ended; zero while it runs.
	Summary CallSummary
}

// CallSummary is what a call's journal says of it, kept with the call when it ends so a
// list of calls needs no journal: how many caller turns, how many the caller cut short,
// and diagnose's first broken stage.
type CallSummary struct {
	Turns       int
	Interrupted int    // turns the caller barged in on
	Stage       string // diagnose's first broken stage (carrier, vad, stt, agent, tts, playout); empty: none
	Problem     string // diagnose's words for it
}

// CallUpdate fills in what is learnt about a call after it started: the carrier's id once
// the carrier reports it, and the node and journal once its media arrives (an outbound
// call is recorded by the node that places it, and answered by whichever node the carrier
// reaches). Empty fields are left as they are.
type CallUpdate struct {
	CarrierRef string
	Node       string
	Journal    string
}

// TranscriptLine is one line of a call's conversation.
type TranscriptLine struct {
	CallID      voice.CallID
	Turn        int
	Role        voice.Role
	Text        string
	At          time.Time
	Interrupted bool // an agent line the caller cut off (Text is what they heard)
}

// Session links a caller to the agent memory they reach.
type Session struct {
	CallerHash string
	SessionKey string
	FirstSeen  time.Time
	LastSeen   time.Time
	Calls      int
	LastCall   voice.CallID
}

// JobState is where a job is in its life cycle.
type JobState string

// Job states.
const (
	JobPending   JobState = "pending"
	JobRunning   JobState = "running"
	JobCompleted JobState = "completed"
	JobFailed    JobState = "failed"
)

// NewJob is what Enqueue takes.
type NewJob struct {
	Kind        string // "outbound_call", "transfer", "handoff", "deliver", …
	Payload     []byte // JSON, the kind's own shape
	RunAt       time.Time
	MaxAttempts int    // default 3
	DedupeKey   string // optional: a second Enqueue with the same key is ErrDuplicate
	// Batch groups jobs queued together (a dialer list) so their progress can be listed.
	Batch string
	// Node, when set, is the only owner that may claim the job: work on a live call runs
	// on the node that holds the call's media.
	Node string
}

// Job is a unit of work with a lease.
type Job struct {
	ID          int64
	Kind        string
	Payload     []byte
	State       JobState
	Attempts    int // claims so far, reclaims included
	MaxAttempts int
	RunAt       time.Time
	LeaseOwner  string
	LeaseUntil  time.Time
	Result      []byte // JSON, on completion
	Error       string // why it failed (the last attempt's error while it retries)
	DedupeKey   string
	Batch       string
	Node        string // the only owner that may claim it; empty for any
	// Checkpoint is the handler's saved progress (JSON), kept across reclaims so a new
	// owner resumes instead of repeating a side effect (a call already placed).
	Checkpoint []byte
	Version    int64 // bumped by every transition
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Node is one Handset process as the store knows it, from its heartbeats.
type Node struct {
	ID        string
	StartedAt time.Time // its first heartbeat
	SeenAt    time.Time // its latest heartbeat
}

// CarrierCall is what Handset remembers of a carrier's call from its first webhook: the
// answer it gave, so a retried webhook gets the same answer from any node, and whether the
// call's media stream has opened, after which a repeat of the webhook is a replay. Entries
// are kept a day or so (PruneCarrierCalls) and hold no more than the answer sent back.
type CarrierCall struct {
	Carrier string // "twilio"
	Ref     string // the carrier's id for the call (Twilio CallSid)
	// RequestKey is the carrier's idempotency key of the first webhook
	// (I-Twilio-Idempotency-Token), which its retries repeat; empty when it sent none.
	RequestKey string
	Answer     []byte    // the body answered (TwiML)
	CreatedAt  time.Time // when the first webhook was answered
	StreamedAt time.Time // when the media stream opened; zero until it has
}

// CarrierProgress is the latest word a carrier's webhooks gave on a call: its ledger entry,
// which a carrier whose API cannot say how a call ended reads back. The store knows no
// carrier's words: the caller ranks the status and the verdict, and the store keeps, of
// each, the one with the highest rank (the first of equal ranks).
type CarrierProgress struct {
	Carrier string
	Ref     string // the call's name as first recorded; aliases resolve to it
	CallID  voice.CallID
	// Status replaces the kept one only with a higher StatusRank.
	Status     string
	StatusRank int
	// AnsweredBy replaces the kept one only with a higher VerdictRank.
	AnsweredBy  string
	VerdictRank int
	Duration    time.Duration // kept once non-zero
	Declined    bool          // kept once true
	At          time.Time     // when the latest word was recorded
}

// ListCalls filters ListCalls; zero values mean no filter. Pages are keyset pages: the
// next page starts Before the last call's StartedAt, with BeforeID its ID (calls started
// at the same instant are ordered by ID, descending).
type ListCalls struct {
	CallerHash string
	Before     time.Time    // started before (or at Before with an ID below BeforeID)
	BeforeID   voice.CallID // the last call of the previous page; only with Before
	Since      time.Time    // started at or after
	Outcome    string       // ended this way ("caller_hangup", …)
	Carrier    string       // "twilio", "browser", …
	Live       bool         // only calls still running
	Broken     bool         // only calls whose summary names a broken stage
	// Text keeps calls whose transcript has a line with every word of Text (case and
	// accents aside; the last word may be the start of a word).
	Text  string
	Limit int // default 50
}

// MaxListCalls is the most calls, sessions or batches one listing returns, whatever its
// Limit asks.
const MaxListCalls = 500

// ListLimit is the number of rows a listing asking for n returns: def when n is not
// positive, at most MaxListCalls.
func ListLimit(n, def int) int {
	if n <= 0 {
		return def
	}
	return min(n, MaxListCalls)
}

// ListJobs filters ListJobs.
type ListJobs struct {
	State JobState
	Kind  string
	Batch string
	After int64 // only jobs with a larger ID (paging)
	// Newest lists newest first; with Before, only jobs with a smaller ID (paging back).
	Newest bool
	Before int64
	Limit  int // default 100
}

// ListSessions pages through callers' sessions, most recently seen first: the next page
// starts Before the last session's LastSeen, with BeforeHash its caller hash.
type ListSessions struct {
	Before     time.Time
	BeforeHash string
	Limit      int // default 50
}

// Batch is the progress of a group of jobs queued together (a dialer list).
type Batch struct {
	Name                                string
	Pending, Running, Completed, Failed int
	First, Last                         time.Time // its first job's CreatedAt, its latest job's UpdatedAt
}

// Store keeps calls, transcripts, sessions and jobs. Safe for concurrent use, and for use
// by several processes sharing one database (PostgreSQL) or one file (SQLite, one node).
type Store interface {
	// StartCall records a new call; its ID must be new (ErrDuplicate).
	StartCall(ctx context.Context, c Call) error
	// UpdateCall sets the non-empty fields of u on call id; ErrNotFound when unknown.
	UpdateCall(ctx context.Context, id voice.CallID, u CallUpdate) error
	// EndCall sets EndedAt and Outcome of a running call. A call already ended keeps its
	// first end (a carrier's status callback may race the engine's own end).
	EndCall(ctx context.Context, id voice.CallID, endedAt time.Time, outcome string) error
	// SummarizeCall keeps s with call id (what its journal said when it ended), replacing
	// any summary it had; ErrNotFound for an unknown call.
	SummarizeCall(ctx context.Context, id voice.CallID, s CallSummary) error
	Call(ctx context.Context, id voice.CallID) (Call, error)
	// Calls lists the calls that pass every filter of f, newest first (calls started at the
	// same instant by ID, descending), at most f.Limit (default 50, never more than
	// MaxListCalls). A Text with no word in it is no filter.
	Calls(ctx context.Context, f ListCalls) ([]Call, error)
	AppendTranscript(ctx context.Context, lines []TranscriptLine) error
	// Transcript returns a call's lines in order (turn, then time).
	Transcript(ctx context.Context, id voice.CallID) ([]TranscriptLine, error)

	// TouchSession records that callerHash called (call) at `at` reaching sessionKey: it
	// creates the session or bumps Calls and LastSeen, keeping the first key it was given
	// unless sessionKey is not empty and differs (then the new key wins).
	TouchSession(ctx context.Context, callerHash, sessionKey string, call voice.CallID, at time.Time) (Session, error)
	Session(ctx context.Context, callerHash string) (Session, error)
	SessionByKey(ctx context.Context, sessionKey string) (Session, error)
	// Sessions lists callers' sessions, most recently seen first (the same LastSeen by
	// caller hash, descending), at most f.Limit (default 50, never more than MaxListCalls).
	Sessions(ctx context.Context, f ListSessions) ([]Session, error)

	Enqueue(ctx context.Context, j NewJob) (Job, error)
	// Claim leases the next due job of one of kinds (all kinds when empty) to owner until
	// now+lease: a pending job whose RunAt has come, or a running job whose lease expired
	// (a dead node's; reclaimed). It counts an attempt; pending jobs come before reclaims. A
	// running job whose lease expired on its last attempt is failed instead ("lease expired
	// on the last attempt"), so a job that kills its node cannot be retried forever. An
	// expired lease stays its owner's until another claim takes it. ok is false when none
	// is due. A job with a Node is only claimed by that owner. On PostgreSQL concurrent
	// claimers never get the same job (FOR UPDATE SKIP LOCKED).
	Claim(ctx context.Context, owner string, kinds []string, lease time.Duration, now time.Time) (j Job, ok bool, err error)
	// Heartbeat extends owner's lease; ErrLeaseLost when the job is no longer its own.
	Heartbeat(ctx context.Context, id int64, owner string, lease time.Duration, now time.Time) error
	// Checkpoint saves owner's progress on a running job (replacing the last checkpoint);
	// ErrLeaseLost when it is no longer its own.
	Checkpoint(ctx context.Context, id int64, owner string, checkpoint []byte, now time.Time) error
	// Complete finishes owner's job with result; ErrLeaseLost when it is no longer its own.
	Complete(ctx context.Context, id int64, owner string, result []byte, now time.Time) error
	// Fail records errMsg. With a non-zero retryAt and attempts left, the job goes back to
	// pending until retryAt; otherwise it is failed for good. ErrLeaseLost as above.
	Fail(ctx context.Context, id int64, owner, errMsg string, retryAt, now time.Time) error
	// Cancel fails a job that is still pending with reason (nobody claimed it in time);
	// ErrNotPending when it is running or finished, which a claimer's result then decides.
	Cancel(ctx context.Context, id int64, reason string, now time.Time) error
	Job(ctx context.Context, id int64) (Job, error)
	// Jobs lists jobs, oldest first (newest first with f.Newest).
	Jobs(ctx context.Context, f ListJobs) ([]Job, error)
	// Batches lists the batches of jobs with their jobs counted by state, the most recently
	// active first (latest UpdatedAt), at most limit (default 50, never more than
	// MaxListCalls). Jobs with no batch are in none.
	Batches(ctx context.Context, limit int) ([]Batch, error)

	// NodeHeartbeat records that node is alive at now, first registering it. Every running
	// node calls it periodically; a node that stops calling it is lost once the silence is
	// long enough (see EndLostCalls).
	NodeHeartbeat(ctx context.Context, node string, now time.Time) error
	// Node returns what the store knows of node; ErrNotFound when it never heartbeated.
	Node(ctx context.Context, node string) (Node, error)
	// EndLostCalls ends, at now and with outcome, every call that is running with its media
	// on a lost node: one that heartbeated (so a node that never did, an older version, is
	// never judged) but not since silentSince. A call with no media yet (an outbound call
	// still ringing, Journal empty) is left to the job that placed it. Each call is ended
	// once: the end is a compare-and-set on its running state, so of several nodes sweeping
	// at once exactly one ends each call, and only that one gets its id back.
	EndLostCalls(ctx context.Context, silentSince, now time.Time, outcome string) ([]voice.CallID, error)
	// EndNodeCalls ends, at now and with outcome, the calls still running with their media
	// on node that started before startedBefore: a node restarted under the same name calls
	// it at start-up for the calls its previous process held when it died. Each call is
	// ended once, as with EndLostCalls.
	EndNodeCalls(ctx context.Context, node string, startedBefore, now time.Time, outcome string) ([]voice.CallID, error)
	// RememberCarrierCall keeps c unless an entry for (c.Carrier, c.Ref) is kept already,
	// and returns the kept entry and whether it is c. Concurrent callers on any node agree on
	// one entry: the first to be kept wins.
	RememberCarrierCall(ctx context.Context, c CarrierCall) (kept CarrierCall, first bool, err error)
	// OpenCarrierStream records that the media stream of (carrier, ref) opened at `at`. It
	// succeeds once: ErrDuplicate when the stream had opened already, ErrNotFound when no
	// entry is kept.
	OpenCarrierStream(ctx context.Context, carrier, ref string, at time.Time) error
	// RecordCarrierProgress merges p into the ledger entry of (p.Carrier, p.Ref), or of the
	// call p.Ref is an alias of, creating it when there is none: each field as
	// CarrierProgress says, CallID kept once set, At the latest. It returns the entry kept.
	// Concurrent callers on any node lose no word.
	RecordCarrierProgress(ctx context.Context, p CarrierProgress) (CarrierProgress, error)
	// CarrierProgress is the ledger entry of (carrier, ref), ref being its name or an alias;
	// ErrNotFound when there is none.
	CarrierProgress(ctx context.Context, carrier, ref string) (CarrierProgress, error)
	// CarrierOnce reports whether (carrier, key) is seen for the first time, remembering it
	// at `at`: of concurrent callers on any node, exactly one is first.
	CarrierOnce(ctx context.Context, carrier, key string, at time.Time) (first bool, err error)
	// AliasCarrierCall makes alias a second name of (carrier, ref) from `at` on: the
	// methods above and RememberCarrierCall/OpenCarrierStream find the call by either. An
	// answer or ledger entry kept under alias alone moves to ref's call (a ledger entry
	// under both is merged). ErrDuplicate when alias already names another call, or both
	// names have an answer kept. Repeating it is harmless.
	AliasCarrierCall(ctx context.Context, carrier, ref, alias string, at time.Time) error
	// PruneCarrierCalls forgets the entries created before `before` (answers, aliases and
	// names seen once; ledger entries by their latest word) and says how many.
	PruneCarrierCalls(ctx context.Context, before time.Time) (int64, error)

	// SharedSecret returns the secret called name, storing candidate as its value when
	// there is none yet: the first node to ask decides, and every node gets the same.
	SharedSecret(ctx context.Context, name, candidate string) (string, error)

	Close() error
}

// Backoff is the wait before retry attempt n (1-based): 5 s doubling, at most 10 min.
func Backoff(attempt int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < attempt && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}
