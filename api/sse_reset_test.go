package api

import (
	"testing"
)

// TestStreamOfAnElectionNotYetCreatedOpensWithAnEmptyReset: the stream of
// an election nobody has campaigned in yet opens with a reset, as every
// fresh stream does: an empty snapshot with the settings the election will
// get and no id (there is nothing to resume from); the first campaign's
// events follow it.
func TestStreamOfAnElectionNotYetCreatedOpensWithAnEmptyReset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	s := e.stream("/v1/elections/fresh/events")
	reset := s.next()
	if reset.Event != EventReset || reset.ID != "" {
		t.Fatalf("the stream opens with %+v; want a reset without an id", reset)
	}
	doc := reset.json(t)
	data := doc["data"].(map[string]any)
	settings, _ := data["settings"].(map[string]any)
	if doc["type"] != EventReset || data["election"] != "fresh" || data["term"] != float64(0) || data["leader"] != nil ||
		len(data["candidates"].([]any)) != 0 || settings["error_cooldown"] != "10s" {
		t.Fatalf("empty snapshot %s", reset.Data)
	}
	e.campaign("fresh", "node-a", "1m")
	joined := s.next()
	if joined.Event != "candidate.joined" || joined.ID == "" {
		t.Fatalf("after the reset: %+v; want the first campaign's candidate.joined", joined)
	}
	if begin := s.next(); begin.Event != "leader.begin" {
		t.Fatalf("then %+v; want leader.begin", begin)
	}
}
