from blog.slugs import slugify


def test_simple():
    assert slugify("Hello, World!") == "hello-world"


def test_accents():
    assert slugify("Crème Brûlée") == "creme-brulee"
