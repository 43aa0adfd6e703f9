package urlredact

import "testing"

func TestString(t *testing.T) {
	public := map[string]bool{"db": true}
	cases := []struct{ in, want string }{
		{"http://u:pw@h/p?token=t&db=2", "http://u:xxxxx@h/p?db=2&token=xxxxx"},
		{"redis://pw@h:1/0", "redis://xxxxx@h:1/0"},
		{"http://h/p#frag", "http://h/p#xxxxx"},
		{"http://h/p?a=%zz", "<test url with an unparsable query>"},
		{"http://[::1/p", "<unparsable test url>"},
		{"http://h/p", "http://h/p"},
	}
	for _, c := range cases {
		if got := String(c.in, "test url", public); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := String("http://h/p?db=2", "x", nil); got != "http://h/p?db=xxxxx" {
		t.Errorf("nil public: %q", got)
	}
}
