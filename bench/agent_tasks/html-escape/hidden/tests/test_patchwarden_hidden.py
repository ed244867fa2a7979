from markup import escape


def test_tags_escaped_once():
    assert escape("<b>") == "&lt;b&gt;"
    assert escape('say "hi" & <go>') == "say &quot;hi&quot; &amp; &lt;go&gt;"
    assert escape("a & b") == "a &amp; b"
