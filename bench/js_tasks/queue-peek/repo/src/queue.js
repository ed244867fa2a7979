'use strict';

function Queue() {
  this.items = [];
}

Queue.prototype.push = function (item) {
  this.items.push(item);
  return this.items.length;
};

Queue.prototype.shift = function () {
  return this.items.shift();
};

Queue.prototype.peek = function () {
  return this.items[this.items.length - 1];
};

Object.defineProperty(Queue.prototype, 'size', {
  get() {
    return this.items.length;
  },
});

module.exports = Queue;
