/**
 * A URL slug of a title: lower case, whitespace as dashes, other punctuation dropped.
 */
export function slugify(title) {
  return title
    .trim()
    .toLowerCase()
    .replace(/[^\w\s-]/g, '')
    .replace(/\s+/g, '-');
}

export function isSlug(text) {
  return /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(text);
}
