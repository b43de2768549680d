package wire

import "testing"

func TestRewrite(t *testing.T) {
	h := func(v string) string { return string(Hashed([]byte(v))) }
	for _, tt := range []struct {
		in    string
		paths []string
		want  string
	}{
		{`{"a":1,"b":"x"}`, []string{"b"}, `{"a":1,"b":` + h(`"x"`) + `}`},
		{`{"a":{"b":[1,{"c":true}]}}`, []string{"a.b.1.c"}, `{"a":{"b":[1,{"c":` + h(`true`) + `}]}}`},
		{`{"a":[{"t":"x"},{"t":"y"}]}`, []string{"a.*.t"}, `{"a":[{"t":` + h(`"x"`) + `},{"t":` + h(`"y"`) + `}]}`},
		{`{"a":{"k":[1, 2]}}`, []string{"a.k"}, `{"a":{"k":` + h(`[1, 2]`) + `}}`},
		// Drop: first, middle, last, all, in arrays.
		{`{"a":1,"b":2,"c":3}`, []string{"-a"}, `{"b":2,"c":3}`},
		{`{"a":1, "b":2, "c":3}`, []string{"-b"}, `{"a":1, "c":3}`},
		{`{"a":1,"b":2,"c":3}`, []string{"-c"}, `{"a":1,"b":2}`},
		{`{"a":1,"b":2,"c":3}`, []string{"-a", "-b"}, `{"c":3}`},
		{`{"a":1,"b":2}`, []string{"-a", "-b"}, `{}`},
		{`{"l":[1,2,3]}`, []string{"-l.0", "-l.2"}, `{"l":[null,2,null]}`},
		{`{"l":[{"a":1,"s":"x"}]}`, []string{"-l.*.s"}, `{"l":[{"a":1}]}`},
		{`{"l":[{"a":[1]},2]}`, []string{"-l.0"}, `{"l":[null,2]}`},
		{`{"o":{"l":[1]},"p":2}`, []string{"-o"}, `{"p":2}`},
		// No match, escaped keys, a value already hashed.
		{`{"a":1}`, []string{"b"}, `{"a":1}`},
		{`{"a\u0062":"x"}`, []string{"ab"}, `{"a\u0062":` + h(`"x"`) + `}`},
		{`{"\u0074oken":"x","q":1}`, []string{"-token"}, `{"q":1}`},
		// Replace.
		{`{"a":"x"}`, nil, `{"a":"x"}`},
		{`{"b":"sha256:0123456789abcdef"}`, []string{"b"}, `{"b":"sha256:0123456789abcdef"}`},
		// A head cut inside a value a rule names is cut there; text after
		// malformed JSON is left as it is.
		{`{"a":1,"q":"secret and mo`, []string{"q"}, `{"a":1,"q":`},
		{`{"a":1,"q":{"deep":[1,2`, []string{"q"}, `{"a":1,"q":`},
		{`{"a":1,"q":"ok","r":"sec`, []string{"r"}, `{"a":1,"q":"ok","r":`},
		{`{"q":"x"} trailing`, []string{"q"}, `{"q":` + h(`"x"`) + `} trailing`},
		{`not json {"q":"x"}`, []string{"q"}, `not json {"q":"x"}`},
	} {
		var rules []Rule
		for _, s := range tt.paths {
			edit := Hash
			if s[0] == '-' {
				s, edit = s[1:], Drop
			}
			p, err := ParsePath(s)
			if err != nil {
				t.Fatal(err)
			}
			rules = append(rules, Rule{Path: p, Edit: edit})
		}
		got, _ := Rewrite([]byte(tt.in), rules)
		if string(got) != tt.want {
			t.Errorf("rewrite(%s, %q) = %s, want %s", tt.in, tt.paths, got, tt.want)
		}
		again, changed := Rewrite(got, rules)
		if changed && string(again) != string(got) {
			t.Errorf("rewrite(%s, %q) twice = %s, want it unchanged", tt.in, tt.paths, again)
		}
	}
}
