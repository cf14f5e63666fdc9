/** Readable names for the identity property names the service's pages use; an unknown name is shown as sent. */
const LABELS: Record<string, string> = {
  FIRST: 'First name',
  MIDDLE: 'Middle name',
  LAST: 'Last name',
  PNR: 'Personal number',
  NATIONALITY: 'Nationality',
  BDAY: 'Birth day',
  BMONTH: 'Birth month',
  BYEAR: 'Birth year',
  ADDR: 'Address',
  ZIP: 'Postal code',
  CITY: 'City',
  COUNTRY: 'Country',
  EMAIL: 'E-mail',
  PHONE: 'Phone',
};

export const label = (name: string): string => (Object.hasOwn(LABELS, name) ? LABELS[name]! : name);
