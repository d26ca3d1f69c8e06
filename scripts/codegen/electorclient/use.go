// Package electorclient is a client generated from openapi.yaml by
// oapi-codegen (client.gen.go, made by scripts/check-codegen.sh and never
// committed). It exists to prove that a standard generator reads the spec
// and that its output compiles; elector's own Go client is package client.
package electorclient

import "context"

// leaderOf uses the generated client the way a program would, so that the
// build also checks the names the spec's operationIds produce.
func leaderOf(ctx context.Context, server, election string) (string, int64, error) {
	c, err := NewClientWithResponses(server)
	if err != nil {
		return "", 0, err
	}
	// A local read (consistency=local): the spec's query parameter.
	local := GetLeaderParamsConsistencyLocal
	res, err := c.GetLeaderWithResponse(ctx, election, &GetLeaderParams{Consistency: &local})
	if err != nil || res.JSON200 == nil {
		return "", 0, err
	}
	return res.JSON200.Id, res.JSON200.Term, nil
}

var _ = leaderOf
