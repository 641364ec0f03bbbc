// How many of the configured fruits the answer names, against the test's `want`.
module.exports.countFruits = (output, context) => {
  const named = context.config.fruits.filter((fruit) => output.toLowerCase().includes(fruit));
  return {
    pass: named.length >= Number(context.vars.want),
    score: Math.min(1, named.length / 3),
    reason: `named ${named.join(', ')}`,
  };
};
