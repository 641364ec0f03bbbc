// accuracy decides; tone is reported but does not block
module.exports.critical = (namedScores, context) => {
  const accuracy = namedScores.accuracy || 0;
  return {
    pass: accuracy >= 1,
    score: accuracy,
    reason: `accuracy ${accuracy} of ${context.componentResults.length} results`,
  };
};
