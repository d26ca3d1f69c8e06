package etcd

import (
	"context"
	"fmt"
	"math"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// A writing transaction goes to etcd as the protobuf request etcd takes,
// built once: the batcher nests it in a batch as it is, and every attempt
// of do sends the same request. clientv3's Txn would copy every
// comparison and operation into a new request on each attempt, and once
// more for each level of nesting; on the campaign path those copies were
// a tenth of the gateway's allocations. The hot writes (a campaign's)
// build the request directly (pbPut, pbTxn, cmpCreate…); the others are
// built with clientv3's Cmp and Op and converted once (txnRequest).

// txnRequest returns the request of a transaction built with clientv3's
// comparisons and operations, as clientv3's own Txn builds it: the
// conversion is clientv3's, run on a KV whose remote keeps the request
// instead of sending it.
func txnRequest(cmps []clientv3.Cmp, thens, elses []clientv3.Op) *pb.TxnRequest {
	var k keepTxn
	_, _ = clientv3.NewKVFromKVClient(&k, nil).Txn(context.Background()).If(cmps...).Then(thens...).Else(elses...).Commit()
	return k.req
}

// keepTxn is a pb.KVClient that keeps the transaction it is given; its
// other methods are never called.
type keepTxn struct {
	pb.KVClient
	req *pb.TxnRequest
}

func (k *keepTxn) Txn(_ context.Context, req *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	k.req = req
	return &pb.TxnResponse{}, nil
}

// txnCallOpts are the call options clientv3 gives a transaction: its
// defaults, which connect leaves as they are (it sets no message size:
// one set there must be set here too).
var txnCallOpts = []grpc.CallOption{
	grpc.WaitForReady(true),
	grpc.MaxCallSendMsgSize(2 << 20),
	grpc.MaxCallRecvMsgSize(math.MaxInt32),
}

// sendTxn sends req on member client c, through its interceptors (auth
// token, version), and answers as clientv3's Txn does.
func sendTxn(ctx context.Context, c *clientv3.Client, req *pb.TxnRequest) (*clientv3.TxnResponse, error) {
	resp, err := pb.NewKVClient(c.ActiveConnection()).Txn(ctx, req, txnCallOpts...)
	if err != nil {
		return nil, clientv3.ContextError(ctx, err)
	}
	return (*clientv3.TxnResponse)(resp), nil
}

// pbPut is a put of val at key, on lease (0: none). Its three messages
// are allocated together (as putOp), as are cmpCreated's and cmpModified's.
func pbPut(key, val string, lease int64) *pb.RequestOp {
	p := new(putOp)
	p.put.Key, p.put.Value, p.put.Lease = []byte(key), []byte(val), lease
	p.union.RequestPut = &p.put
	p.op.Request = &p.union
	return &p.op
}

type putOp struct {
	op    pb.RequestOp
	union pb.RequestOp_RequestPut
	put   pb.PutRequest
}

type createCmp struct {
	cmp   pb.Compare
	union pb.Compare_CreateRevision
}

type modCmp struct {
	cmp   pb.Compare
	union pb.Compare_ModRevision
}

// pbGet is a read of key.
func pbGet(key string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key)}}}
}

// pbTxn is a nested transaction.
func pbTxn(cmps []*pb.Compare, thens, elses []*pb.RequestOp) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Compare: cmps, Success: thens, Failure: elses}}}
}

// cmpCreated compares key's create revision with rev (0: key absent).
func cmpCreated(key string, rev int64) *pb.Compare {
	c := new(createCmp)
	c.union.CreateRevision = rev
	c.cmp.Key, c.cmp.Target, c.cmp.Result, c.cmp.TargetUnion = []byte(key), pb.Compare_CREATE, pb.Compare_EQUAL, &c.union
	return &c.cmp
}

// cmpNoneUnder requires that no key starts with prefix.
func cmpNoneUnder(prefix string) *pb.Compare {
	c := cmpCreated(prefix, 0)
	c.RangeEnd = []byte(clientv3.GetPrefixRangeEnd(prefix))
	return c
}

// cmpModified compares key's mod revision with rev.
func cmpModified(key string, rev int64) *pb.Compare {
	c := new(modCmp)
	c.union.ModRevision = rev
	c.cmp.Key, c.cmp.Target, c.cmp.Result, c.cmp.TargetUnion = []byte(key), pb.Compare_MOD, pb.Compare_EQUAL, &c.union
	return &c.cmp
}

// commitTxn sends req, a writing transaction, as the backend's KV sends
// one: to the batcher as it is when the KV is the backend's own, and
// through the KV, as clientv3's types (clientTxn), when a test has wrapped
// it (WrapKV) to count its requests or lose their answers.
func (b *Backend) commitTxn(ctx context.Context, req *pb.TxnRequest) (*clientv3.TxnResponse, error) {
	if _, own := b.cli.KV.(routedKV); own {
		return b.members.batch.commit(ctx, req)
	}
	cmps, thens, elses := clientTxn(req)
	return b.cli.Txn(ctx).If(cmps...).Then(thens...).Else(elses...).Commit()
}

// clientTxn returns req as clientv3's comparisons and operations. It
// takes the fields the builders above set (a put's key, value and lease;
// a range's or a delete's key and end), nested transactions too, and
// panics on any other, so that a wrapped KV never gets a different
// transaction than etcd would.
func clientTxn(req *pb.TxnRequest) (cmps []clientv3.Cmp, thens, elses []clientv3.Op) {
	for _, c := range req.Compare {
		cmps = append(cmps, clientv3.FromCompare(c))
	}
	only := func(got, want proto.Message) {
		if !proto.Equal(got, want) {
			panic(fmt.Sprintf("etcd: clientTxn cannot convert %v", got))
		}
	}
	ops := func(rs []*pb.RequestOp) []clientv3.Op {
		var out []clientv3.Op
		for _, r := range rs {
			switch r := r.Request.(type) {
			case *pb.RequestOp_RequestPut:
				p := r.RequestPut
				only(p, &pb.PutRequest{Key: p.Key, Value: p.Value, Lease: p.Lease})
				out = append(out, clientv3.OpPut(string(p.Key), string(p.Value), clientv3.WithLease(clientv3.LeaseID(p.Lease))))
			case *pb.RequestOp_RequestRange:
				g := r.RequestRange
				only(g, &pb.RangeRequest{Key: g.Key, RangeEnd: g.RangeEnd})
				out = append(out, clientv3.OpGet(string(g.Key), withEnd(g.RangeEnd)...))
			case *pb.RequestOp_RequestDeleteRange:
				d := r.RequestDeleteRange
				only(d, &pb.DeleteRangeRequest{Key: d.Key, RangeEnd: d.RangeEnd})
				out = append(out, clientv3.OpDelete(string(d.Key), withEnd(d.RangeEnd)...))
			case *pb.RequestOp_RequestTxn:
				out = append(out, clientv3.OpTxn(clientTxn(r.RequestTxn)))
			default:
				panic(fmt.Sprintf("etcd: clientTxn cannot convert %v", r))
			}
		}
		return out
	}
	return cmps, ops(req.Success), ops(req.Failure)
}

func withEnd(end []byte) []clientv3.OpOption {
	if len(end) == 0 {
		return nil
	}
	return []clientv3.OpOption{clientv3.WithRange(string(end))}
}
