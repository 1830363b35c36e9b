// The previews in words of the token form and the consent page: `text` written into `element`, each
// `name` between backticks shown as code; nothing is rewritten when the words are the same.
window.previewWords = function (element, text) {
  "use strict";
  if (!element || element.textContent === text.replace(/`/g, "")) return;
  element.textContent = "";
  text.split("`").forEach(function (part, index) {
    if (index % 2) {
      var code = document.createElement("code");
      code.textContent = part;
      element.appendChild(code);
    } else {
      element.appendChild(document.createTextNode(part));
    }
  });
};
