package etcd_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/electorhq/elector/gateway"
)

// The Status in answers, found without building the election, is exactly
// gateway.StatusOf of the election's snapshot, for every kind of
// candidate: leader, followers, in cooldown, behind a native client, and
// with nobody leading.
func TestStatusIsStatusOfTheSnapshot(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "status")
	ctx := context.Background()
	cooldown := gateway.Settings{ErrorCooldown: time.Hour}
	campaign := func(e, id string) string {
		t.Helper()
		th := gateway.HashToken(gateway.NewToken())
		if _, err := b.Campaign(ctx, e, gateway.Candidacy{ID: id, TTL: 30 * time.Second, TokenHash: th, Metadata: []byte(`{"n":"` + id + `"}`)}, cooldown); err != nil {
			t.Fatal(err)
		}
		return th
	}
	tokens := map[string]string{}
	// "led": a leads, b, c follow, d cools down.
	for _, id := range []string{"a", "b", "c", "d"} {
		tokens["led/"+id] = campaign("led", id)
	}
	if _, err := b.ReportError(ctx, "led", "d", tokens["led/d"], "boom"); err != nil {
		t.Fatal(err)
	}
	// "native": a native client leads; x and y follow it.
	s, err := concurrency.NewSession(b.Client(), concurrency.WithTTL(30))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := concurrency.NewElection(s, "status/native").Campaign(ctx, "native-1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"x", "y"} {
		tokens["native/"+id] = campaign("native", id)
	}
	// "ended": the leader cooled down with nobody waiting: nobody leads.
	tokens["ended/a"] = campaign("ended", "a")
	if _, err := b.ReportError(ctx, "ended", "a", tokens["ended/a"], "boom"); err != nil {
		t.Fatal(err)
	}
	// "transfer": a leads, a transfer to c is pending, b and c follow.
	for _, id := range []string{"a", "b", "c"} {
		tokens["transfer/"+id] = campaign("transfer", id)
	}
	if _, err := b.Transfer(ctx, "transfer", "c", ""); err != nil {
		t.Fatal(err)
	}
	// "moved": keys moved by a handover (a, b behind c) and by a priority
	// (p, 2, ahead of a and b): c leads, then p, b, a.
	for _, id := range []string{"a", "b", "c"} {
		tokens["moved/"+id] = campaign("moved", id)
	}
	if _, err := b.Transfer(ctx, "moved", "c", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Handover(ctx, "moved", "a", tokens["moved/a"]); err != nil {
		t.Fatal(err)
	}
	th := gateway.HashToken(gateway.NewToken())
	if _, err := b.Campaign(ctx, "moved", gateway.Candidacy{ID: "p", TTL: 30 * time.Second, Priority: 2, TokenHash: th}, cooldown); err != nil {
		t.Fatal(err)
	}
	tokens["moved/p"] = th
	if st, err := b.Status(ctx, "moved", "a", tokens["moved/a"]); err != nil || st.Position != 3 || st.Leader == nil || st.Leader.ID != "c" {
		t.Fatalf("moved/a: %+v, %v; want at position 3 behind c, p and b", st, err)
	}
	if _, err := b.Election(ctx, "native"); err != nil { // the cache has every write
		t.Fatal(err)
	}

	for key, th := range tokens {
		e, id, _ := cut(key)
		want, ok, err := b.StatusOfSnapshot(ctx, e, id)
		if err != nil || !ok {
			t.Fatalf("%s: snapshot has no %s: %v", e, id, err)
		}
		got, err := b.Status(ctx, e, id, th)
		if err != nil {
			t.Fatalf("%s/%s: %v", e, id, err)
		}
		// A native leader's lease expiry is unknown until Run looks it up,
		// and then shown as the time of the answer.
		for _, s := range []*gateway.Status{&got, &want} {
			if s.Leader != nil && s.Leader.ID == "native-1" {
				l := *s.Leader
				l.ExpiresAt = time.Time{}
				s.Leader = &l
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s/%s:\n got %+v (leader %+v)\nwant %+v (leader %+v)", e, id, got, got.Leader, want, want.Leader)
		}
	}
	if _, err := b.Status(ctx, "led", "a", gateway.HashToken("other")); err == nil {
		t.Error("status with another token hash answered")
	}
	if _, err := b.Status(ctx, "led", "nobody", tokens["led/a"]); err == nil {
		t.Error("status of an unknown candidate answered")
	}
}

func cut(key string) (e, id string, ok bool) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}
