// The reply in capitals, without the spaces around it.
module.exports = (output, context) => output.trim().toUpperCase();
