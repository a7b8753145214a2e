// Package checked is the machinery of memkit's checked build (-tags
// memkitdebug), shared by every allocator: call stacks recorded at
// allocation and free, a table of live and recently freed blocks that turns
// a double or foreign free into a report naming both stacks, poison and
// guard patterns, and the registry behind memkit.Leaks.
//
// Allocators guard every use with the constant [Enabled], so the release
// build compiles the calls away and pays nothing.
package checked
