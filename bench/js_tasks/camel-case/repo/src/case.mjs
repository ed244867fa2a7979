/** snake_case or kebab-case words as camelCase: `foo_bar` is `fooBar`. */
export const toCamel = (text) =>
  text.replace(/[_-]([a-z0-9])/, (_, letter) => letter.toUpperCase());

/** camelCase as snake_case: `fooBar` is `foo_bar`. */
export const toSnake = (text) =>
  text.replace(/([a-z0-9])([A-Z])/g, (_, a, b) => `${a}_${b.toLowerCase()}`);
