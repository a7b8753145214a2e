package option

import "testing"

type config struct{ n int }
type opt func(*config)

func TestApply(t *testing.T) {
	add := func(k int) opt { return func(c *config) { c.n = c.n*10 + k } }
	var c config
	if err := Apply(&c, []opt{add(1), add(2)}); err != nil || c.n != 12 {
		t.Fatalf("Apply = %v, n = %d; want nil, 12", err, c.n)
	}
	c = config{}
	err := Apply(&c, []opt{add(1), nil, add(3)})
	if err == nil || err.Error() != "option 2 of 3 is nil" || c.n != 1 {
		t.Fatalf("Apply with a nil option = %v, n = %d; want \"option 2 of 3 is nil\", 1", err, c.n)
	}
}
