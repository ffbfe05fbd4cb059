package dashboard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// heartbeat is how often an idle stream gets a comment line, so proxies and the browser
// know it is alive; tests shorten it.
var heartbeat = 15 * time.Second

// writeGrace is how much longer than a heartbeat each write extends the stream's write
// deadline by: the server's own write timeout would otherwise cut every stream after a
// minute.
const writeGrace = 30 * time.Second

// callEvents streams one live call's events: what happened so far, then each as it comes.
func (d *Dashboard) callEvents(w http.ResponseWriter, r *http.Request, v viewer) {
	id, ok := callID(r)
	if !ok {
		plain(w, http.StatusNotFound, "There is no such call.")
		return
	}
	d.stream(w, r, id)
}

// liveEvents streams every live call's events, for the live list.
func (d *Dashboard) liveEvents(w http.ResponseWriter, r *http.Request, _ viewer) { d.stream(w, r, "") }

func (d *Dashboard) stream(w http.ResponseWriter, r *http.Request, id voice.CallID) {
	if d.o.Live == nil {
		plain(w, http.StatusNotFound, "Live calls are not followed on this server.")
		return
	}
	sub, backlog, live, err := d.o.Live.subscribe(id)
	if err != nil {
		w.Header().Set("Retry-After", "30")
		plain(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if !live {
		// 204 tells EventSource not to reconnect: the call is over (or on another node).
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	defer d.o.Live.unsubscribe(id, sub)
	rc := http.NewResponseController(w)
	// The request has been read: no read deadline may end the stream (net/http cancels a
	// handler's context when one passes), and writes extend their own.
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := bufio.NewWriter(w)
	send := func(event string, data any) error {
		_ = rc.SetWriteDeadline(time.Now().Add(heartbeat + writeGrace))
		if event != "" {
			b, err := json.Marshal(data)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "event: %s\ndata: %s\n\n", event, b)
		} else {
			out.WriteString(": alive\n\n")
		}
		if err := out.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send("hello", map[string]any{"call": id, "backlog": len(backlog)}); err != nil {
		return
	}
	for _, ev := range backlog {
		if send("journal", ev) != nil {
			return
		}
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if send("", nil) != nil {
				return
			}
		case ev, ok := <-sub.ch:
			if !ok {
				if d.o.Live.wasLost(sub) {
					_ = send("lost", map[string]string{"message": "This page fell behind the call and missed events: reload it to catch up."})
				} else {
					_ = send("end", map[string]string{"message": "The call has ended."})
				}
				return
			}
			if send("journal", ev) != nil {
				return
			}
		}
	}
}

// liveRow is a live call on the live page, its caller as the viewer may see them.
type liveRow struct {
	liveCallView
	Who string
}

func (d *Dashboard) livePage(w http.ResponseWriter, r *http.Request, v viewer) {
	var rows []liveRow
	if d.o.Live != nil {
		for _, c := range d.o.Live.snapshot() {
			row := liveRow{liveCallView: c, Who: c.CallerHash}
			if c.Caller != "" && row.Who == "" {
				row.Who = c.Caller
			}
			if rec, err := d.o.Source.Call(r.Context(), c.ID); err == nil {
				row.Who = v.caller(rec)
			} else if !errors.Is(err, store.ErrNotFound) {
				d.log.Warn("dashboard: the store failed", "call", c.ID, "err", err)
			}
			rows = append(rows, row)
		}
	}
	d.render(w, r, http.StatusOK, "live", v, map[string]any{"Title": "Live calls", "Calls": rows, "Following": d.o.Live != nil})
}
