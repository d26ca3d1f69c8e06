package nats

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Shutdown stops the server and waits until it has flushed and closed its
// stores. A member of a cluster first hands what it leads to other
// members (handOver), so that a rolling restart pauses writes for a
// leader transfer, not for an election after its silence.
func (e *Embedded) Shutdown() {
	if e.srv.JetStreamIsClustered() {
		e.handOver(HandOverWait)
	}
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// HandOverWait bounds how long a member that shuts down spends handing
// over (handOver): waiting for what it leads (JetStream's meta group,
// streams) to have a leader elsewhere, then moving the consumers it hosts.
const HandOverWait = 3 * time.Second

// handOver moves every leadership this member holds to another member and
// waits, at most wait, until each has a leader on another member:
//
//   - JetStream's meta group, which places streams and consumers and
//     answers the API. While it has no leader, every member answers a
//     message get ("JetStream system temporarily unavailable") at once,
//     so every record read, and every write that reads first, fails. The
//     server steps it down itself as it shuts down, but without waiting:
//     its routes may close before the transfer is sent, and the others
//     then elect only after missing this member for 4 to 9 s.
//   - the streams it leads (JetStream's stream leader step-down: the
//     leader names a current follower, which stands at once);
//   - then the consumers of one replica it hosts, the other members'
//     watches', which are deleted so that their readers make them again
//     elsewhere at once (moveConsumers).
//
// Leadership is the raft groups' to move: the records and their
// compare-and-set chain are the same whichever member leads, and a group
// elects one leader per term whichever way the term began. handOver only
// asks for a transfer earlier than the shutdown would.
func (e *Embedded) handOver(wait time.Duration) {
	start := time.Now()
	name := e.srv.Name()
	meta := e.srv.JetStreamIsLeader()
	if meta {
		if err := e.stepDownMeta(wait); err != nil {
			e.log.LogAttrs(context.Background(), slog.LevelWarn, "nats: meta leader step-down", slog.Any("err", err))
		}
	}
	acc := e.srv.GlobalAccount().Name
	mine, _ := e.leading(acc, name)
	for _, st := range mine {
		if err := e.srv.JetStreamStepdownStream(acc, st); err != nil {
			e.log.LogAttrs(context.Background(), slog.LevelWarn, "nats: stream leader step-down", slog.String("stream", st), slog.Any("err", err))
		}
	}
	handed := !meta && len(mine) == 0
	for !handed && time.Since(start) < wait {
		time.Sleep(20 * time.Millisecond)
		left, leaderless := e.leading(acc, name)
		handed = len(left) == 0 && len(leaderless) == 0 && e.metaElsewhere(name)
	}
	if !handed {
		e.log.LogAttrs(context.Background(), slog.LevelWarn, "nats: leadership still here, or nowhere, at shutdown",
			slog.Bool("meta", meta), slog.Any("streams", mine), slog.Duration("waited", wait))
		return
	}
	moved := e.moveConsumers(acc, name, start.Add(wait))
	if meta || len(mine) > 0 || moved > 0 {
		e.log.LogAttrs(context.Background(), slog.LevelInfo, "nats: handed leadership to other members",
			slog.Bool("meta", meta), slog.Any("streams", mine), slog.Int("consumers", moved), slog.Duration("took", time.Since(start)))
	}
}

// moveConsumers deletes the consumers of one replica that this member
// hosts, so that their readers make them again on another member at once
// and returns how many it deleted, by until at the latest.
//
// Each replica's watch reads through such a consumer (tail), which
// JetStream places on a member of its choosing. When that member stops,
// the watch would notice only after two missed heartbeats (4 s): nats.go's
// pull iterator does not pass on the server's "409 Server Shutdown". Its
// replica's reads would wait for the view (gateway.CatchUpGrace) and go
// to the stream leader meanwhile, and its events and webhooks would lag.
// A deleted consumer ends its reader's pull at once ("409 Consumer
// Deleted"), and the reader makes another from the message after its last
// (tail.remake) on a member JetStream picks, which may be this one again
// while it is up: so moveConsumers looks again after the readers had time
// to, until none is here. Nothing is lost: a reader goes on from where it
// was, whichever consumer delivers.
func (e *Embedded) moveConsumers(acc, name string, until time.Time) (moved int) {
	hosted := e.hostedConsumers(acc, name)
	if len(hosted) == 0 {
		return 0
	}
	nc, err := e.Connect(e.log)
	if err != nil {
		e.log.LogAttrs(context.Background(), slog.LevelWarn, "nats: consumers left to their readers' heartbeats", slog.Any("err", err))
		return 0
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		e.log.LogAttrs(context.Background(), slog.LevelWarn, "nats: consumers left to their readers' heartbeats", slog.Any("err", err))
		return 0
	}
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	for len(hosted) > 0 && ctx.Err() == nil {
		for _, c := range hosted {
			if js.DeleteConsumer(ctx, c[0], c[1]) == nil {
				moved++
			}
		}
		// The readers make their consumers again after tailRetryEvery/2
		// to 3/2 of it: look once they have.
		time.Sleep(min(2*tailRetryEvery, time.Until(until)))
		hosted = e.hostedConsumers(acc, name)
	}
	return moved
}

// hostedConsumers lists, as {stream, consumer}, the consumers of one
// replica (no followers) of account acc that this member (name) hosts.
func (e *Embedded) hostedConsumers(acc, name string) [][2]string {
	jsz, err := e.srv.Jsz(&server.JSzOptions{Account: acc, Streams: true, Consumer: true})
	if err != nil {
		return nil
	}
	var out [][2]string
	for _, a := range jsz.AccountDetails {
		for _, st := range a.Streams {
			for _, c := range st.Consumer {
				if c != nil && c.Cluster != nil && c.Cluster.Leader == name && len(c.Cluster.Replicas) == 0 {
					out = append(out, [2]string{st.Name, c.Name})
				}
			}
		}
	}
	return out
}

// leading lists the clustered streams of account acc that this member
// (name) leads, and those without a leader.
func (e *Embedded) leading(acc, name string) (mine, leaderless []string) {
	jsz, err := e.srv.Jsz(&server.JSzOptions{Account: acc, Streams: true})
	if err != nil {
		return nil, nil
	}
	for _, a := range jsz.AccountDetails {
		for _, st := range a.Streams {
			switch {
			case st.Cluster == nil:
			case st.Cluster.Leader == name:
				mine = append(mine, st.Name)
			case st.Cluster.Leader == "":
				leaderless = append(leaderless, st.Name)
			}
		}
	}
	return mine, leaderless
}

// metaElsewhere reports whether this member (name) knows of a meta leader
// other than itself.
func (e *Embedded) metaElsewhere(name string) bool {
	jsz, err := e.srv.Jsz(&server.JSzOptions{})
	if err != nil || jsz.Meta == nil {
		return false
	}
	return jsz.Meta.Leader != "" && jsz.Meta.Leader != name
}

// stepDownMeta asks JetStream's meta leader, this member, to hand its
// leadership to a current follower. Only the system account may ask
// ($JS.API.META.LEADER.STEPDOWN): the request goes over an in-process
// connection that systemAuth lets in there.
func (e *Embedded) stepDownMeta(timeout time.Duration) error {
	if e.auth == nil {
		return fmt.Errorf("no system account connection on a server without a cluster")
	}
	nc, err := nats.Connect("", nats.InProcessServer(e.srv), nats.UserInfo(systemUser, e.auth.secret),
		nats.Name("elector meta handover"), nats.NoReconnect())
	if err != nil {
		return fmt.Errorf("system account connection: %w", err)
	}
	defer nc.Close()
	resp, err := nc.Request("$JS.API.META.LEADER.STEPDOWN", nil, timeout)
	if err != nil {
		return err
	}
	var answer struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &answer); err != nil {
		return fmt.Errorf("answer %q: %w", resp.Data, err)
	}
	if !answer.Success {
		if answer.Error != nil {
			return fmt.Errorf("refused: %s", answer.Error.Description)
		}
		return fmt.Errorf("refused: %s", resp.Data)
	}
	return nil
}

// systemUser is the user name of the in-process connection that
// stepDownMeta makes into the system account.
const systemUser = "elector-system"

// systemAuth is a clustered embedded server's client authentication. It
// lets every client in as a server without authentication does (into the
// global account, whatever it sends), but one that names systemUser: that
// one needs the password made for this process, which only the process
// has, and is put in the system account.
type systemAuth struct {
	secret string
	srv    atomic.Pointer[server.Server]
}

func newSystemAuth() *systemAuth {
	return &systemAuth{secret: rand.Text()}
}

// Check implements server.Authentication.
func (a *systemAuth) Check(c server.ClientAuthentication) bool {
	o := c.GetOpts()
	if o == nil || o.Username != systemUser {
		return true
	}
	srv := a.srv.Load()
	if srv == nil || c.Kind() != server.CLIENT || subtle.ConstantTimeCompare([]byte(o.Password), []byte(a.secret)) != 1 {
		return false
	}
	c.RegisterUser(&server.User{Username: systemUser, Account: srv.SystemAccount()})
	return true
}
