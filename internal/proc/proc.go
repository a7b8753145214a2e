// Package proc reads figures about the running process that the runtime
// does not report, for memkit's measuring tools (the demo, grpctest).
package proc
