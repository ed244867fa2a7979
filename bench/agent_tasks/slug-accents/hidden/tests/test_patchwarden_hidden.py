from blog.slugs import slugify


def test_accents_and_punctuation():
    assert slugify("Crème Brûlée") == "creme-brulee"
    assert slugify("  Ünïcödé  Títle ") == "unicode-title"
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("naïve café 2") == "naive-cafe-2"
