// Package grpctest runs a gRPC echo service on loopback, without protoc, for
// the tests and benchmarks of buffer pools: grpcpool's own and the memkit
// command's gRPC workloads. Its codec takes buffers from the pool under test
// as gRPC's proto codec takes them from the default pool.
package grpctest

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// codec sends the message bytes as they are, so that the test service
// needs no protoc, and takes its buffers from pool as gRPC's proto codec
// takes them from mem.DefaultBufferPool: Marshal of a *[]byte copies it into
// one pooled buffer of the message's size, Unmarshal into a *[]byte
// materializes the received buffers into one pooled buffer and copies it
// out. A *mem.BufferSlice instead keeps gRPC's received buffers and hands
// them back to be sent: the server echoes without copying.
type codec struct{ pool mem.BufferPool }

func (codec) Name() string { return "memkit-raw" }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if bs, ok := v.(*mem.BufferSlice); ok {
		return *bs, nil // gRPC frees it once sent
	}
	b := *v.(*[]byte)
	if mem.IsBelowBufferPoolingThreshold(len(b)) {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	h := c.pool.Get(len(b))
	copy(*h, b)
	return mem.BufferSlice{mem.NewBuffer(h, c.pool)}, nil
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if bs, ok := v.(*mem.BufferSlice); ok {
		data.Ref() // keep the buffers past the return; Marshal passes them on
		*bs = data
		return nil
	}
	buf := data.MaterializeToBuffer(c.pool)
	defer buf.Free()
	src := buf.ReadOnlyData()
	dst := v.(*[]byte)
	if cap(*dst) < len(src) {
		*dst = make([]byte, len(src))
	}
	*dst = (*dst)[:len(src)]
	copy(*dst, src)
	return nil
}

// The service's limits and methods.
const (
	// MaxMsg is the largest message the server and client accept.
	MaxMsg = 8 << 20
	// UnaryMethod echoes its request.
	UnaryMethod = "/memkit.Echo/Unary"
	// SizedMethod answers a request holding a size n (8 bytes, big-endian)
	// with n bytes: the responses of grpc-go issue 8500's scenario.
	SizedMethod = "/memkit.Echo/Sized"
	// StreamMethod echoes every message of a bidirectional stream; open it
	// with conn.NewStream(ctx, StreamDesc, StreamMethod).
	StreamMethod = "/memkit.Echo/Stream"
)

// StreamDesc describes StreamMethod.
var StreamDesc = &echoDesc.Streams[0]

// zeros backs the responses of Sized, read-only.
var zeros = make([]byte, MaxMsg)

// echoDesc is a hand-written service: Unary echoes its request, Stream
// echoes every message it receives, Sized answers a request holding a size n
// (8 bytes, big-endian) with n bytes (grpc-go issue 8500's responses).
var echoDesc = grpc.ServiceDesc{
	ServiceName: "memkit.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Sized",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			out := zeros[:binary.BigEndian.Uint64(in)]
			return &out, nil
		},
	}, {
		MethodName: "Unary",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(mem.BufferSlice)
			if err := dec(in); err != nil {
				return nil, err
			}
			return in, nil
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Stream",
		ServerStreams: true,
		ClientStreams: true,
		Handler: func(_ any, s grpc.ServerStream) error {
			var in mem.BufferSlice
			for {
				if err := s.RecvMsg(&in); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
				if err := s.SendMsg(&in); err != nil {
					return err
				}
			}
		},
	}},
}

// Start starts the echo service on 127.0.0.1 and returns a client
// connection to it. With a nil pool both sides use gRPC's default pool;
// otherwise both use pool, through experimental.BufferPool and
// experimental.WithBufferPool, and the codec takes its buffers from it.
// Server and connection close at the end of the test.
func Start(tb testing.TB, pool mem.BufferPool) *grpc.ClientConn {
	tb.Helper()
	codec := codec{pool: mem.DefaultBufferPool()}
	var srvOpts []grpc.ServerOption
	var dialOpts []grpc.DialOption
	if pool != nil {
		codec.pool = pool
		srvOpts = append(srvOpts, experimental.BufferPool(pool))
		dialOpts = append(dialOpts, experimental.WithBufferPool(pool))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer(append(srvOpts,
		grpc.ForceServerCodecV2(codec), grpc.MaxRecvMsgSize(MaxMsg), grpc.MaxSendMsgSize(MaxMsg))...)
	srv.RegisterService(&echoDesc, struct{}{})
	go srv.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), append(dialOpts,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(codec),
			grpc.MaxCallRecvMsgSize(MaxMsg), grpc.MaxCallSendMsgSize(MaxMsg)))...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		srv.Stop()
	})
	return conn
}

// Fill writes a pattern that depends on seed into b.
func Fill(b []byte, seed int) {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}
