package dial

import (
	"github.com/emiago/sipgo/sip"
)

// Dialogs are the outbound calls in progress, for the requests their callees send inside
// them. The trunk's server handlers for BYE, ACK, NOTIFY, INVITE, INFO and the rest call
// Handle first and handle the request themselves only when it returns false.
type Dialogs struct{}

// NewDialogs makes an empty set.
func NewDialogs() *Dialogs { return &Dialogs{} }

// Handle answers req when it belongs to one of the dialogs and reports whether it did.
func (ds *Dialogs) Handle(req *sip.Request, tx sip.ServerTransaction) bool { panic("not yet") }

// Len is the number of dialogs in progress.
func (ds *Dialogs) Len() int { panic("not yet") }
