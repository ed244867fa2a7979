'use strict';

const query = {
  /** `a=1&b=2` as `{ a: '1', b: '2' }`; a key given more than once keeps every value, in order. */
  parse(text) {
    const out = {};
    for (const part of text.replace(/^\?/, '').split('&')) {
      if (!part) continue;
      const [rawKey, rawValue = ''] = part.split('=');
      const key = decodeURIComponent(rawKey);
      const value = decodeURIComponent(rawValue.replace(/\+/g, ' '));
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        out[key] = [].concat(out[key], value);
      } else {
        out[key] = value;
      }
    }
    return out;
  },

  /** The inverse of parse: arrays become repeated keys. */
  stringify(params) {
    const parts = [];
    for (const [key, value] of Object.entries(params)) {
      for (const one of [].concat(value)) {
        parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(one)}`);
      }
    }
    return parts.join('&');
  },
};

module.exports = query;
